import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "effect/FastCheck"
import {
  gitRefusesPath,
  LOG_FORMAT,
  nulPathsInput,
  objectIdsInput,
  parseCatFileBatch,
  parseLog,
  parseLsTree,
  parseNulPaths
} from "../../src/domain/GitFormats.js"
import { bytesOfName, hasEscapedBytes, nameOfBytes } from "../../src/domain/NameBytes.js"
import * as NodeProcessRunner from "../../src/layers/NodeProcessRunner.js"
import { gitEnvironment, gitGlobalArgs, makeGit } from "../../src/services/internal/git.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

describe("the git runner's isolation (values)", () => {
  it("the environment is built from nothing: config off, fixed identity, only PATH passed on", () => {
    const write = gitEnvironment({ pathVar: "/usr/bin", read: false, nowMs: 1_700_000_000_500 })
    assert.strictEqual(write.GIT_CONFIG_GLOBAL, "/dev/null")
    assert.strictEqual(write.GIT_CONFIG_SYSTEM, "/dev/null")
    assert.strictEqual(write.GIT_CONFIG_NOSYSTEM, "1")
    assert.strictEqual(write.GIT_ATTR_NOSYSTEM, "1")
    assert.strictEqual(write.PATH, "/usr/bin")
    assert.strictEqual(write.GIT_COMMITTER_DATE, "@1700000000 +0000")
    assert.isUndefined(write.GIT_OPTIONAL_LOCKS)
    assert.strictEqual(gitEnvironment({ pathVar: undefined, read: true }).GIT_OPTIONAL_LOCKS, "0")
    const allowed = new Set(["PATH", "LC_ALL", "LANG", "PAGER", "TZ"])
    for (const key of Object.keys(write)) assert.isTrue(key.startsWith("GIT_") || allowed.has(key), key)
    for (const inherited of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "HOME", "XDG_CONFIG_HOME"]) {
      assert.notProperty(write, inherited)
    }
  })

  it("every call names its repository and disables hooks, signing and the user's attributes", () => {
    const args = gitGlobalArgs("/h/.git", "/h")
    assert.includeMembers([...args], [
      "--git-dir=/h/.git", "--work-tree=/h", "core.hooksPath=/dev/null", "commit.gpgsign=false", "safe.directory=/h",
      "core.quotepath=false", "core.attributesFile=/dev/null", "core.protectNTFS=true", "log.showSignature=false"
    ])
  })
})

/** A runner on a fresh repository in a scratch directory, with the real executor. */
const freshRepo = Effect.gen(function*() {
  const workTree = scratch("git-runner-")
  const git = makeGit({ runner: NodeProcessRunner.make, gitDir: NodePath.join(workTree, ".git"), workTree, pathVar: process.env.PATH })
  yield* git(["init", "-q"])
  return { git, workTree }
})

describe("the git runner with real git", () => {
  it.live("a name that is not UTF-8 survives add, ls-files, commit, ls-tree, log and cat-file as the same bytes", () =>
    Effect.gen(function*() {
      const { git, workTree } = yield* freshRepo
      const raw = Buffer.concat([Buffer.from("web/n/config/caf"), Buffer.from([0xe9, 0x20, 0xff]), Buffer.from("\n.txt")])
      const name = nameOfBytes(raw)
      assert.isTrue(hasEscapedBytes(name))
      fs.mkdirSync(NodePath.join(workTree, "web", "n", "config"), { recursive: true })
      fs.writeFileSync(Buffer.concat([Buffer.from(workTree + "/"), raw]), "bytes\n")
      fs.writeFileSync(NodePath.join(workTree, "web", "n", "config", "plain.txt"), "plain\n")
      const paths = [name, "web/n/config/plain.txt"]
      yield* git(["update-index", "--add", "-z", "--stdin"], { stdin: nulPathsInput(paths) })
      const indexed = parseNulPaths((yield* git(["ls-files", "-z", "--", "web"], { read: true })).stdout, 10)
      assert.deepStrictEqual(indexed.ok && [...indexed.value].sort(), [...paths].sort())
      assert.deepStrictEqual(indexed.ok && indexed.value.map((p) => Buffer.from(bytesOfName(p)).toString("hex")).sort(), [
        Buffer.from("web/n/config/plain.txt").toString("hex"), raw.toString("hex")
      ].sort())
      yield* git(["commit", "-q", "-m", "first"], { nowMs: 1_700_000_000_000 })
      const tree = parseLsTree((yield* git(["ls-tree", "-r", "-z", "--full-tree", "HEAD", "--", "web"], { read: true })).stdout, { scopes: ["web"], max: 10 })
      assert.isTrue(tree.ok)
      const files = tree.ok ? tree.value : []
      assert.sameMembers(files.map((f) => f.path), paths)
      const oids = files.map((f) => f.oid)
      const blobs = parseCatFileBatch((yield* git(["cat-file", "--batch"], { read: true, stdin: objectIdsInput(oids) })).stdout, oids, 1 << 20)
      assert.deepStrictEqual(blobs.ok && blobs.value.map((b) => Buffer.from(b).toString()), files.map((f) => (f.path === name ? "bytes\n" : "plain\n")))
      const log = parseLog((yield* git(["log", "-z", "--name-only", "--no-renames", "-n5", LOG_FORMAT, "HEAD", "--"], { read: true })).stdout, { limit: 5, maxPaths: 10 })
      assert.deepStrictEqual(log.ok && [...log.value[0]!.paths].sort(), [...paths].sort())
    }))

  it.live("an answer larger than the call's cap is a failure, never a silent cut", () =>
    Effect.gen(function*() {
      const { git, workTree } = yield* freshRepo
      fs.writeFileSync(NodePath.join(workTree, "a"), "x".repeat(4096))
      yield* git(["update-index", "--add", "-z", "--stdin"], { stdin: nulPathsInput(["a"]) })
      const oid = (yield* git(["ls-files", "-z", "-s"], { read: true })).stdout.subarray(7, 47)
      const failed = yield* Effect.flip(git(["cat-file", "--batch"], { read: true, stdin: new Uint8Array([...oid, 0x0a]), maxOutputBytes: 1024 }))
      assert.strictEqual(failed._tag, "GitFailed")
      assert.include(failed.message, "more than 1024 bytes")
    }))

  /** Components built around what git's rules turn on: `.git`, `git~1` in any case, then spaces, dots, `:`, backslashes. */
  const component = fc.tuple(
    fc.constantFrom("", "a\\", "\\"),
    fc.constantFrom(".git", "git~1", ".GIT", "GiT~1", ".gi", "git", "git~2", "a", ".", ".."),
    fc.array(fc.constantFrom(" ", ".", ":", "\\", "a", "1", "~"), { maxLength: 3 })
  ).map(([before, stem, after]) => before + stem + after.join(""))

  it.effect.prop("gitRefusesPath says exactly which names git leaves out of its index", [fc.uniqueArray(component, { minLength: 1, maxLength: 40 })], ([components]) =>
    Effect.gen(function*() {
      const { git } = yield* freshRepo
      const empty = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
      // Each name as a file and as a directory on the way, in paths that cannot clash with one another.
      const paths = components.flatMap((c, i) => [`agent/x${i}/${c}`, `agent/${c}/y${i}`])
      const info = paths.map((p) => `100644 ${empty}\t${p}\0`).join("")
      yield* git(["update-index", "-z", "--index-info"], { stdin: new TextEncoder().encode(info) })
      const indexed = parseNulPaths((yield* git(["ls-files", "-z"], { read: true })).stdout, 1000)
      assert.isTrue(indexed.ok)
      assert.sameMembers(indexed.ok ? [...indexed.value] : [], paths.filter((p) => gitRefusesPath(p) === null))
    }), { fastCheck: { numRuns: 8 } })
})
