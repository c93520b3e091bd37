/**
 * The native read of run directories (fsat.c `readRuns`, runReads.ts) beyond the conformance suite, which
 * checks each part answers what the single calls answer: a path holding a NUL is refused alone (copied, it
 * would name another directory), a path that is neither a string nor bytes is a bad argument, an addon whose
 * measure is of another version is not used (its sizes stand for measureTree's), and a defect while turning
 * the answer into the port's fails the read instead of leaving it waiting forever.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { type Fsat, loadFsat } from "../../../src/layers/node/fsat.js"
import { makeNativeReadParts } from "../../../src/layers/node/runReads.js"

const loaded = loadFsat()
const fsat = (): Fsat => {
  if (!("fsat" in loaded)) throw new Error(`native walker ${loaded.why}`)
  return loaded.fsat
}

const EINVAL = 22

/** A run directory holding a manifest and one lease, under a fresh temp dir (removed by the caller). */
const runDir = () => {
  const root = fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-runreads-"))
  const dir = NodePath.join(root, "run")
  fs.mkdirSync(NodePath.join(dir, ".leases"), { recursive: true })
  fs.writeFileSync(NodePath.join(dir, "m.json"), "{}")
  fs.writeFileSync(NodePath.join(dir, ".leases", "l1"), "")
  return { root, dir }
}

/** readRuns called directly, its answer as the callback got it. */
const callReadRuns = (dirs: ReadonlyArray<unknown>) =>
  new Promise<{ queued: number; numbers?: Float64Array | undefined; texts?: ReadonlyArray<string> | undefined }>((resolve) => {
    const queued = fsat().readRuns!(dirs as ReadonlyArray<string>, "m.json", ".leases", 4096, 100, 8, (numbers, _bytes, _names, _types, texts) =>
      resolve({ queued: 0, numbers, texts }))
    if (queued !== 0) resolve({ queued })
  })

const noDirectory = () => Effect.die("no single-call listing in this test")

type ReadRunsCallback = Parameters<NonNullable<Fsat["readRuns"]>>[6]

/** The real addon but for `readRuns`, which queues nothing and calls back with `answer`'s arguments. */
const answering = (answer: (callback: ReadRunsCallback) => void): Fsat => ({
  ...fsat(),
  readRuns: (_dirs, _file, _listing, _maxBytes, _maxEntries, _maxDepth, callback) => {
    setImmediate(() => answer(callback))
    return 0
  }
})

describe("readRuns (native)", () => {
  it("a path holding a NUL is refused alone (EINVAL for each part); the paths beside it are read", async () => {
    const { root, dir } = runDir()
    try {
      // Copied into C up to its NUL, the second path would name `dir` itself.
      const r = await callReadRuns([dir, `${dir}\0elsewhere`])
      assert.strictEqual(r.queued, 0)
      const numbers = r.numbers!
      assert.strictEqual(numbers[0], 0, "the first directory's manifest is read")
      assert.strictEqual(numbers[2], 2, "its two bytes")
      assert.strictEqual(numbers[4], 1, "its one lease")
      assert.strictEqual(numbers[11 + 0], -EINVAL, "the NUL path's file part")
      assert.strictEqual(numbers[11 + 3], -EINVAL, "the NUL path's listing")
      assert.strictEqual(numbers[11 + 5], -EINVAL, "the NUL path's measure")
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it("a path that is neither a string nor bytes is a bad argument (EINVAL, no callback)", async () => {
    const { root, dir } = runDir()
    try {
      assert.strictEqual((await callReadRuns([dir, 42])).queued, -EINVAL)
      assert.strictEqual((await callReadRuns([dir, {}])).queued, -EINVAL)
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it("through the port's form, the NUL path answers typed errors and the others their parts", async () => {
    const { root, dir } = runDir()
    try {
      const read = makeNativeReadParts(fsat(), noDirectory)!
      const answers = await Effect.runPromise(read([dir, `${dir}\0elsewhere`], { file: "m.json", listing: ".leases", maxBytes: 4096 }))
      assert.isTrue(Either.isRight(answers[0]!.file))
      assert.deepStrictEqual(Either.getOrThrow(answers[0]!.listing).map((e) => e.name), ["l1"])
      const file = answers[1]!.file
      assert.isTrue(Either.isLeft(file))
      if (Either.isLeft(file)) assert.strictEqual(file.left.errno, "EINVAL")
      assert.isTrue(Either.isLeft(answers[1]!.listing))
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it("an addon whose measure is of another version is not used for run reads", () => {
    const real = fsat()
    assert.isDefined(makeNativeReadParts(real, noDirectory))
    assert.isUndefined(makeNativeReadParts({ ...real, measureVersion: (real.measureVersion ?? 0) + 1 }, noDirectory))
    assert.isUndefined(makeNativeReadParts({ ...real, readRunsVersion: (real.readRunsVersion ?? 0) + 1 }, noDirectory))
  })

  it("a defect while reading the answer fails the read as a defect instead of waiting forever", async () => {
    const { root, dir } = runDir()
    try {
      // An addon that answers with no names string where one belongs: turning its answer into the port's throws.
      const broken = answering((callback) => callback(new Float64Array(11), Buffer.alloc(0), 42 as unknown as string, "", undefined))
      const read = makeNativeReadParts(broken, noDirectory)!
      const exit = await Effect.runPromiseExit(read([dir], { file: "m.json", listing: ".leases", maxBytes: 4096 }).pipe(Effect.timeout("5 seconds")))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.isTrue(exit.cause._tag === "Die", `a defect, not ${exit.cause._tag}`)
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it("an answer with no room left (no numbers) is ENOMEM for every part", async () => {
    const { root, dir } = runDir()
    try {
      const starved = answering((callback) => callback(undefined))
      const read = makeNativeReadParts(starved, noDirectory)!
      const [answer] = await Effect.runPromise(read([dir], { file: "m.json", listing: ".leases", maxBytes: 4096, measure: { maxEntries: 10, maxDepth: 4 } }))
      const errnoOf = (part: Either.Either<unknown, { readonly errno: string }>) => (Either.isLeft(part) ? part.left.errno : "read")
      assert.deepStrictEqual([errnoOf(answer!.file), errnoOf(answer!.listing), errnoOf(answer!.measure!)], ["ENOMEM", "ENOMEM", "ENOMEM"])
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})
