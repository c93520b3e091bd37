/**
 * ConfigHistory against a damaged or hostile history repository, with real git as a user meets it: a revision
 * with a missing object or a cut-short answer is refused before anything is written; the mirror follows a
 * directory turned into a file (and back); the repository's own filter and diff drivers never run; a damaged
 * HEAD is corruption, an unborn one is "none"; names git refuses are reported, names that are not UTF-8 versioned.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, HashMap, Logger } from "effect"
import { type StorageWarning, warningFromLog } from "../../src/domain/Warnings.js"
import { runNode } from "../support/child.js"
import { scratchDirs } from "../support/scratchDirs.js"
import { cleanGitEnv, rawGit, rawGitBytes, setup } from "./configHistorySupport.js"

const CLI = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const scratch = scratchDirs()
const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n"

/** Every file under `dir` with its bytes (base64): a picture to compare before and after. */
const picture = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  if (!fs.existsSync(dir)) return out
  for (const rel of fs.readdirSync(dir, { recursive: true }).map(String).sort()) {
    const p = NodePath.join(dir, rel)
    const st = fs.lstatSync(p)
    out[rel] = st.isFile() ? fs.readFileSync(p).toString("base64") : st.isDirectory() ? "<dir>" : "<other>"
  }
  return out
}

/** The live config trees of a fixture, without the history itself. */
const livePicture = (root: string) => {
  const agent = picture(NodePath.join(root, "agent"))
  for (const k of Object.keys(agent)) if (k.startsWith("state")) delete agent[k]
  return { agent, web: picture(NodePath.join(root, "web")) }
}

/** The loose object file of `oid` in the history repository. */
const looseObject = (historyDir: string, oid: string) => NodePath.join(historyDir, ".git", "objects", oid.slice(0, 2), oid.slice(2))

/** A directory holding a `git` that runs the real one and passes its answer to `cat-file` through `filter` (a shell pipe stage). */
const gitWrapper = (filter: string): string => {
  const real = rawGit(process.cwd(), ["--exec-path"]).trim()
  const dir = scratch("git-wrapper-")
  const script = [
    "#!/bin/sh",
    `for a in "$@"; do if [ "$a" = cat-file ]; then "${real}/git" "$@" | ${filter}; exit 0; fi; done`,
    `exec "${real}/git" "$@"`
  ].join("\n") + "\n"
  fs.writeFileSync(NodePath.join(dir, "git"), script, { mode: 0o755 })
  return `${dir}:${process.env.PATH ?? "/usr/bin:/bin"}`
}

/** The built CLI on the fixture's agent dir and its web data root (`setup`'s `web`, beside the agent dir). */
const cli = (agent: string, ...args: ReadonlyArray<string>) => {
  const env: NodeJS.ProcessEnv = { ...process.env, PI_WEB_DATA_DIR: NodePath.join(NodePath.dirname(agent), "web") }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  return Effect.promise(() => runNode(CLI, ["--agent-dir", agent, "config", ...args], { env }))
}

const collectingWarnings = <A, E, R>(body: (warnings: Array<StorageWarning>) => Effect.Effect<A, E, R>) => {
  const warnings: Array<StorageWarning> = []
  const logger = Logger.make(({ annotations, message }) => {
    const w = warningFromLog(String(Array.isArray(message) ? message.join(" ") : message), new Map(HashMap.toEntries(annotations)))
    if (w !== undefined) warnings.push(w)
  })
  return body(warnings).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
}

describe("ConfigHistory against a damaged or hostile repository (real git)", () => {
  it.scopedLive("a revision with a missing object is refused before anything is written (ConfigHistoryCorrupt, CLI exit 1)", () =>
    Effect.gen(function*() {
      const { history, write, root, agent } = yield* setup({ web: true })
      write("agent/settings.json", json({ theme: "old" }))
      write("agent/models.json", json({ model: "old" }))
      write("web/notes/config/a.txt", "old a\n")
      const first = yield* history.snapshot({ message: "first" })
      write("agent/settings.json", json({ theme: "new" }))
      write("agent/models.json", json({ model: "new" }))
      write("web/notes/config/a.txt", "new a\n")
      yield* history.snapshot({ message: "second" })
      // The first revision's settings.json blob is gone from the object store.
      const blob = rawGit(history.dir, ["rev-parse", `${first.revision}:agent/settings.json`]).trim()
      fs.rmSync(looseObject(history.dir, blob))
      write("agent/models.json", json({ model: "unsaved edit" }))
      const before = livePicture(root)
      const logBefore = rawGit(history.dir, ["rev-list", "HEAD"])

      const refused = yield* Effect.flip(history.rollback(first.revision!))
      assert.strictEqual(refused._tag, "ConfigHistoryCorrupt")
      assert.include(refused.message, `object ${blob} is missing`)
      assert.deepStrictEqual(livePicture(root), before, "every live file byte-identical")
      assert.strictEqual(rawGit(history.dir, ["rev-list", "HEAD"]), logBefore, "no revision was made either")

      const viaCli = yield* cli(agent, "rollback", first.revision!, "--web-data-root", NodePath.join(root, "web"))
      assert.strictEqual(viaCli.code, 1, viaCli.stdout + viaCli.stderr)
      assert.include(viaCli.stderr, "is damaged")
      assert.notInclude(viaCli.stdout, "Rolled back")
      assert.deepStrictEqual(livePicture(root), before)
    }))

  for (const [name, filter] of [
    ["cut short", "head -c -3"],
    ["with trailing bytes", "cat - && printf extra"],
    ["with a garbled header", "sed '1s/ blob / blub /'"]
  ] as const) {
    it.scopedLive(`a cat-file answer ${name} is refused before anything is written`, () =>
      Effect.gen(function*() {
        const { history, write, root } = yield* setup({ web: true, pathVar: gitWrapper(filter) })
        write("agent/settings.json", json({ theme: "old" }))
        write("web/notes/config/a.txt", "old a\n")
        const first = yield* history.snapshot({ message: "first" })
        write("agent/settings.json", json({ theme: "new" }))
        write("web/notes/config/a.txt", "new a\n")
        const before = livePicture(root)
        const refused = yield* Effect.flip(history.rollback(first.revision!))
        assert.strictEqual(refused._tag, "ConfigHistoryCorrupt", refused.message)
        assert.deepStrictEqual(livePicture(root), before)
      }))
  }

  it.scopedLive("a config directory turned into a file (and back): history follows the live tree, rollback crosses the change", () =>
    Effect.gen(function*() {
      const { history, write, read, root } = yield* setup({ web: true })
      const sub = NodePath.join(root, "web/notes/config/sub")
      write("web/notes/config/sub/a.json", json({ a: 1 }))
      write("web/notes/config/sub/deep/b.txt", "b\n")
      write("web/notes/config/keep.txt", "keep\n")
      const asDirectory = yield* history.snapshot({ message: "a directory" })

      fs.rmSync(sub, { recursive: true })
      write("web/notes/config/sub", "now a file\n")
      assert.isTrue((yield* history.status()).dirty)
      const toFile = yield* history.snapshot({ message: "a file" })
      assert.sameMembers([...toFile.changed], ["notes/config/sub", "notes/config/sub/a.json", "notes/config/sub/deep/b.txt"])
      assert.isFalse((yield* history.status()).dirty)
      assert.strictEqual(rawGit(history.dir, ["show", "HEAD:web/notes/config/sub"]), "now a file\n")

      fs.rmSync(sub)
      write("web/notes/config/sub/c.txt", "c\n")
      const back = yield* history.snapshot({ message: "a directory again" })
      assert.sameMembers([...back.changed], ["notes/config/sub", "notes/config/sub/c.txt"])
      assert.isFalse((yield* history.status()).dirty)
      assert.deepStrictEqual(rawGit(history.dir, ["ls-tree", "-r", "--name-only", "HEAD"]).trim().split("\n").sort(), [
        "web/notes/config/keep.txt", "web/notes/config/sub/c.txt"
      ])

      // Rollback to the file: the tracked files in the directory go, the directory with them, the file comes.
      const r1 = yield* history.rollback(toFile.revision!)
      assert.deepStrictEqual(r1.skipped, [])
      assert.strictEqual(read("web/notes/config/sub"), "now a file\n")
      // And back across it to the first directory.
      const r2 = yield* history.rollback(asDirectory.revision!)
      assert.deepStrictEqual(r2.skipped, [])
      assert.deepStrictEqual(r2.removed, ["notes/config/sub"])
      assert.strictEqual(read("web/notes/config/sub/a.json"), json({ a: 1 }))
      assert.strictEqual(read("web/notes/config/sub/deep/b.txt"), "b\n")
      assert.isFalse((yield* history.status()).dirty)
      // A directory holding an untracked file is never removed to make way: the path is reported.
      write("web/notes/config/sub/untracked.pem", "not ours\n")
      const r3 = yield* history.rollback(toFile.revision!)
      assert.deepStrictEqual(r3.skipped.map((s) => [s._tag, s.path]), [["NotARegularFile", "notes/config/sub"]])
      assert.strictEqual(read("web/notes/config/sub/untracked.pem"), "not ours\n")
    }))

  it.scopedLive("the repository's own filter and diff drivers never run: snapshot, log, diff, status, rollback", () =>
    collectingWarnings((warnings) =>
      Effect.gen(function*() {
        const { history, write, read, root } = yield* setup({ web: true })
        write("agent/settings.json", json({ theme: "dark" }))
        write("web/notes/config/a.txt", "plain\n")
        const first = yield* history.snapshot({ message: "first" })
        const canaries = scratch("canary-")
        const touch = (what: string) => `touch ${canaries}/${what}`
        const config = (key: string, value: string) => rawGit(history.dir, ["config", "--file", ".git/config", key, value])
        config("filter.evil.clean", `sh -c '${touch("clean")}; tr a-z A-Z'`)
        config("filter.evil.smudge", `sh -c '${touch("smudge")}; cat'`)
        config("filter.evil.required", "true")
        config("filter.evilp.process", `sh -c '${touch("process")}; exit 1'`)
        config("diff.evil.textconv", `sh -c '${touch("textconv")}; cat "$0"'`)
        config("diff.evil.command", `sh -c '${touch("command")}'`)
        config("diff.external", `sh -c '${touch("external")}'`)
        config("core.attributesFile", NodePath.join(history.dir, ".git", "planted-attributes"))
        const attributes = "* filter=evil diff=evil\n*.txt filter=evilp ident eol=crlf working-tree-encoding=UTF-16\n"
        fs.writeFileSync(NodePath.join(history.dir, ".gitattributes"), attributes)
        fs.writeFileSync(NodePath.join(history.dir, "agent", ".gitattributes"), attributes)
        fs.writeFileSync(NodePath.join(history.dir, ".git", "info", "attributes"), attributes)
        fs.writeFileSync(NodePath.join(history.dir, ".git", "planted-attributes"), attributes)

        write("agent/settings.json", json({ theme: "light" }))
        write("web/notes/config/a.txt", "changed $Id$\r\n")
        write("web/notes/config/b.txt", "new\n")
        assert.isTrue((yield* history.status()).dirty)
        const live = yield* history.diff()
        assert.sameMembers([...live.files], ["settings.json", "notes/config/a.txt", "notes/config/b.txt"])
        assert.include(live.patch, '+  "theme": "light"')
        const second = yield* history.snapshot({ message: "second" })
        assert.lengthOf(yield* history.log(), 2)
        const between = yield* history.diff({ from: first.revision!, to: second.revision! })
        assert.include(between.patch, '-  "theme": "dark"')
        yield* history.rollback(first.revision!)
        assert.strictEqual(read("agent/settings.json"), json({ theme: "dark" }))
        assert.strictEqual(read("web/notes/config/a.txt"), "plain\n")
        yield* history.rollback(second.revision!)
        // Stored and restored byte for byte: no clean filter, no end-of-line, ident or encoding conversion.
        assert.strictEqual(rawGit(history.dir, ["cat-file", "blob", `${second.revision}:web/notes/config/a.txt`]), "changed $Id$\r\n")
        assert.strictEqual(read("web/notes/config/a.txt"), "changed $Id$\r\n")
        assert.strictEqual(read("agent/settings.json"), json({ theme: "light" }))

        assert.deepStrictEqual(fs.readdirSync(canaries), [], "no driver of the repository's config ran")
        assert.isTrue(warnings.some((w) => w._tag === "ConfigGitAttributesReset"), "the planted info/attributes is reported as reset")
        // The planted drivers are live for a plain git in that repository: the check above can fail.
        fs.writeFileSync(NodePath.join(history.dir, ".git", "info", "attributes"), attributes)
        fs.writeFileSync(NodePath.join(history.dir, "agent", "probe.json"), "{}\n")
        fs.writeFileSync(NodePath.join(history.dir, "agent", "probe.txt"), "x\n")
        // (The process filter fails on purpose: git's exit code does not matter here, the canaries do.)
        spawnSync("git", ["add", "agent/probe.json", "agent/probe.txt"], { cwd: history.dir, env: cleanGitEnv(), stdio: "ignore" })
        assert.includeMembers(fs.readdirSync(canaries), ["clean", "process"])
      })
    ))

  it.scopedLive("an unborn HEAD (a repository with no commit yet) is none, and files staged in it are changed", () =>
    Effect.gen(function*() {
      const { history, write } = yield* setup()
      write("agent/settings.json", json({ v: 1 }))
      // A repository with no commit yet (a diff before the first snapshot makes none: ConfigHistoryFirstDiff):
      // a live diff stages in it and puts it back.
      fs.mkdirSync(history.dir, { recursive: true })
      rawGit(history.dir, ["init", "-q"])
      assert.deepStrictEqual((yield* history.diff()).files, ["settings.json"])
      assert.isTrue(fs.existsSync(NodePath.join(history.dir, ".git", "HEAD")))
      assert.deepStrictEqual(yield* history.status(), { head: null, dirty: true, interrupted: null })
      assert.deepStrictEqual(yield* history.log(), [])
      const first = yield* history.snapshot({ message: "first" })
      assert.strictEqual((yield* history.status()).head, first.revision)
      // A branch a person packed (git gc, pack-refs) is read from packed-refs, not taken for an unborn one.
      rawGit(history.dir, ["pack-refs", "--all"])
      assert.isFalse(fs.existsSync(NodePath.join(history.dir, ".git", "refs", "heads", "main")))
      assert.strictEqual((yield* history.status()).head, first.revision)
      assert.lengthOf(yield* history.log(), 1)
      write("agent/settings.json", json({ v: 2 }))
      const second = yield* history.snapshot({ message: "second" })
      assert.deepStrictEqual((yield* history.log()).map((e) => e.revision), [second.revision, first.revision])
    }))

  it.scopedLive("the error that met the damage is kept as the cause: a ref that cannot be read, git that cannot run", () =>
    Effect.gen(function*() {
      const { history, write } = yield* setup()
      write("agent/settings.json", json({ v: 1 }))
      const first = yield* history.snapshot({ message: "first" })
      // HEAD a directory: the read of the ref failed (a FileSystemError), which is not a parse of its content.
      const headFile = NodePath.join(history.dir, ".git", "HEAD")
      const good = fs.readFileSync(headFile)
      fs.rmSync(headFile)
      fs.mkdirSync(headFile)
      const unreadable = yield* Effect.flip(history.status())
      assert.strictEqual(unreadable._tag, "ConfigHistoryCorrupt")
      const fsCause = unreadable._tag === "ConfigHistoryCorrupt" ? unreadable.cause : undefined
      assert.strictEqual(fsCause?._tag, "FileSystemError")
      assert.strictEqual(fsCause?._tag === "FileSystemError" && fsCause.reason, "IsADirectory")
      fs.rmdirSync(headFile)
      fs.writeFileSync(headFile, good)
      // A revision whose tree is gone: git's own failure (exit 128) is the cause.
      const tree = rawGit(history.dir, ["rev-parse", `${first.revision}^{tree}`]).trim()
      fs.rmSync(looseObject(history.dir, tree))
      const listing = yield* Effect.flip(history.rollback(first.revision!))
      assert.strictEqual(listing._tag, "ConfigHistoryCorrupt", listing.message)
      const gitCause = listing._tag === "ConfigHistoryCorrupt" ? listing.cause : undefined
      assert.strictEqual(gitCause?._tag, "GitFailed")
      assert.strictEqual(gitCause?._tag === "GitFailed" && gitCause.exitCode, 128)
    }))

  it.scopedLive("git that cannot be started is GitFailed whose cause is the ProcessFailed (Spawn), errno kept", () =>
    Effect.gen(function*() {
      const { history, write } = yield* setup({ pathVar: scratch("no-git-") })
      write("agent/settings.json", json({ v: 1 }))
      const e = yield* Effect.flip(history.snapshot({ message: "first" }))
      assert.strictEqual(e._tag, "GitFailed", e.message)
      const cause = e._tag === "GitFailed" ? e.cause : undefined
      assert.strictEqual(cause?.reason, "Spawn")
      assert.strictEqual((cause?.cause as NodeJS.ErrnoException | undefined)?.code, "ENOENT")
    }))

  it.scopedLive("a damaged HEAD is ConfigHistoryCorrupt for status, log, diff, rollback and snapshot (CLI exit 1)", () =>
    Effect.gen(function*() {
      const { history, write, agent } = yield* setup()
      write("agent/settings.json", json({ v: 1 }))
      const first = yield* history.snapshot({ message: "first" })
      const headFile = NodePath.join(history.dir, ".git", "HEAD")
      const mainRef = NodePath.join(history.dir, ".git", "refs", "heads", "main")
      const good = { head: fs.readFileSync(headFile), main: fs.readFileSync(mainRef) }
      const damages: ReadonlyArray<readonly [string, () => void]> = [
        ["garbage in HEAD", () => fs.writeFileSync(headFile, "garbage\n")],
        ["an empty HEAD", () => fs.writeFileSync(headFile, "")],
        ["HEAD naming a tag", () => fs.writeFileSync(headFile, "ref: refs/tags/x\n")],
        ["garbage in the branch", () => fs.writeFileSync(mainRef, "not a commit id\n")],
        ["a branch naming a missing commit", () => fs.writeFileSync(mainRef, "0123456789abcdef0123456789abcdef01234567\n")]
      ]
      for (const [what, damage] of damages) {
        damage()
        write("agent/settings.json", json({ v: what }))
        for (const [op, run] of [
          ["status", history.status()],
          ["log", history.log()],
          ["diff", history.diff()],
          ["rollback", history.rollback(first.revision!)],
          ["snapshot", history.snapshot()]
        ] as const) {
          const e = yield* Effect.flip(run as Effect.Effect<unknown, { readonly _tag: string; readonly message: string }>)
          assert.strictEqual(e._tag, "ConfigHistoryCorrupt", `${what}: ${op}: ${e.message}`)
        }
        if (what === damages[0]![0]) {
          // As a user meets it (once: a CLI start is costly).
          const status = yield* cli(agent, "status")
          assert.strictEqual(status.code, 1, `${what}: ${status.stdout}${status.stderr}`)
          assert.include(status.stderr, "is damaged")
          assert.notInclude(status.stdout, "Head:")
        }
        fs.writeFileSync(headFile, good.head)
        fs.writeFileSync(mainRef, good.main)
      }
      assert.strictEqual((yield* history.status()).head, first.revision)
    }))

  it.scopedLive("names git refuses are listed as skipped, never silently dropped; a name that is not UTF-8 is versioned as its bytes", () =>
    Effect.gen(function*() {
      const { history, write, root } = yield* setup({ web: true })
      const config = NodePath.join(root, "web", "notes", "config")
      write("web/notes/config/ok.txt", "ok\n")
      write("web/notes/config/.git/config", "[core]\n")
      write("web/notes/config/.GIT", "x\n")
      write("web/notes/config/sub/git~1", "x\n")
      write("web/notes/config/sub/a\\.git", "x\n")
      write("agent/profiles/directories/.Git/settings.json", json({}))
      // A name whose bytes are not UTF-8 (0xff, 0xe9).
      const raw = Buffer.concat([Buffer.from("caf"), Buffer.from([0xe9, 0x2d, 0xff]), Buffer.from(".txt")])
      fs.writeFileSync(Buffer.concat([Buffer.from(config + "/"), raw]), "bytes\n")
      const r = yield* history.snapshot()
      const skipped = new Map(r.skipped.map((s) => [s.path, s]))
      for (const path of ["notes/config/.git/", "notes/config/.GIT", "notes/config/sub/git~1", "notes/config/sub/a\\.git", "profiles/directories/.Git/settings.json"]) {
        assert.strictEqual(skipped.get(path)?._tag, "UnversionableName", `${path}: ${JSON.stringify(r.skipped)}`)
      }
      // Not in the mirror either: git never sees a .git of ours inside the work tree.
      assert.isFalse(fs.existsSync(NodePath.join(history.dir, "web", "notes", "config", ".git")))
      // The name that is not UTF-8: versioned as its exact bytes (names are bytes), never skipped.
      const tree = rawGitBytes(history.dir, ["ls-tree", "-r", "-z", "--name-only", "HEAD"])
      const versioned = tree.includes(Buffer.concat([Buffer.from("web/notes/config/"), raw, Buffer.from([0])]))
      const listed = r.skipped.filter((s) => s.path.startsWith("notes/config/caf"))
      assert.isTrue(versioned && listed.length === 0, `versioned: ${versioned}, listed: ${JSON.stringify(listed)}`)
      assert.include(tree.toString("latin1"), "web/notes/config/ok.txt")
    }))

  it.scopedLive("log reads a hand-made commit's subject as it is, separators and all", () =>
    Effect.gen(function*() {
      const { history, write } = yield* setup()
      write("agent/settings.json", json({ v: 1 }))
      yield* history.snapshot({ message: "ours" })
      const subject = "by hand \x1e/0123456789abcdef0123456789abcdef01234567/1/fake \x1f end"
      // A commit of this history's files (its log lists the revisions that touch them).
      fs.writeFileSync(NodePath.join(history.dir, "agent", "models.json"), json({ m: 1 }))
      rawGit(history.dir, ["add", "agent/models.json"])
      rawGit(history.dir, ["-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", subject])
      const log = yield* history.log()
      assert.deepStrictEqual(log.map((e) => [e.message, e.changed]), [[subject, ["models.json"]], ["ours", ["settings.json"]]])
    }))
})
