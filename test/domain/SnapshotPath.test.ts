/** Manifest paths of a state snapshot decoded as untrusted input: one rule, relative, normalised, in scope. */
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { decodeSnapshotPath, inRestoreScope, SNAPSHOT_AGENT_ENTRIES, snapshotTreeProblem } from "../../src/domain/SnapshotPath.js"

/** Strings built from the pieces that make paths dangerous, so the property meets them often. */
const hostilePath = fc.array(
  fc.oneof(
    fc.constantFrom("agent", "web", "state", "extensions", "foo", "bar", "sessions", "MEMORY.md", "backups", "restore-aside", "extensions", "Foo", ".x"),
    fc.constantFrom("/", "//", "..", ".", "../", "/..", "\0", "\\", "~", ""),
    fc.string({ maxLength: 4 })
  ),
  { maxLength: 10 }
).map((parts) => parts.join(""))

/** Paths under a scope root with names of any characters (a slash in a name makes more segments). */
const scopedPath = fc.tuple(
  fc.constantFrom("agent/state", "agent/state/extensions", "agent/sessions", "agent/MEMORY.md", "web/foo/state", "web/x.y-z/state"),
  fc.array(fc.oneof(fc.string({ minLength: 1, maxLength: 6 }), fc.constantFrom("..", ".", "backups", "a b")), { maxLength: 4 })
).map(([root, names]) => [root, ...names].join("/"))

const BASE = "/live/base"

describe("decodeSnapshotPath", () => {
  it.prop("a path that decodes stays inside its tree when joined, is already normal, and lies in the snapshot's scope", [fc.oneof(hostilePath, fc.string(), scopedPath)], ([path]) => {
    const decoded = decodeSnapshotPath(path)
    if (!decoded.ok) return
    const { segments, rootDepth, extension } = decoded.value
    assert.strictEqual(NodePath.posix.normalize(path), path)
    assert.isFalse(NodePath.posix.isAbsolute(path))
    const live = NodePath.join(BASE, ...segments.slice(1))
    assert.isTrue(live.startsWith(`${BASE}/`), live)
    assert.strictEqual(NodePath.relative(BASE, live).split(NodePath.sep).length, segments.length - 1)
    if (segments[0] === "agent") {
      assert.strictEqual(rootDepth, 2)
      assert.include(SNAPSHOT_AGENT_ENTRIES, segments[1])
      if (segments[1] === "state") assert.notInclude(["backups", "restore-aside"], segments[2])
      assert.strictEqual(extension, segments[1] === "state" && segments[2] === "extensions" ? segments[3] : undefined)
    } else {
      assert.strictEqual(segments[0], "web")
      assert.strictEqual(segments[2], "state")
      assert.match(segments[1]!, /^[a-z0-9][a-z0-9._-]*$/)
      assert.strictEqual(extension, segments[1])
    }
  }, { fastCheck: { numRuns: 2000 } })

  it("refuses each way out of the scope, and says why", () => {
    const refused: ReadonlyArray<readonly [string, RegExp]> = [
      ["", /is empty/],
      ["/etc/passwd", /is absolute/],
      ["agent/state/../../.ssh/authorized_keys", /has a "\.\." segment/],
      ["agent/./state/x", /has a "\." segment/],
      ["agent/state//x", /empty segment/],
      ["agent/state/x/", /empty segment/],
      ["agent/state/x\0y", /NUL/],
      ["agent", /agent tree itself/],
      ["agent/extensions/evil/index.js", /agent\/extensions is not a state or memory entry/],
      ["agent/settings.json", /outside the snapshot's scope/],
      ["agent/state/backups/config/history/.git/config", /agent\/state\/backups is never snapshotted/],
      ["agent/state/restore-aside/x", /never snapshotted/],
      ["web/foo", /only web\/foo\/state/],
      ["web/foo/config/settings.json", /only web\/foo\/state/],
      ["web/Foo/state/x", /valid extension ids/],
      ["web/.restore-aside/state/x", /valid extension ids/],
      ["home/user/.bashrc", /neither agent\/ nor web\//],
      ["a".repeat(5000), /longer than/]
    ]
    for (const [path, why] of refused) {
      const decoded = decodeSnapshotPath(path)
      assert.isFalse(decoded.ok, path)
      if (!decoded.ok) assert.match(decoded.why, why, path)
    }
  })

  it("a one-extension restore covers that extension's two trees and nothing else", () => {
    const ext = (path: string) => {
      const decoded = decodeSnapshotPath(path)
      assert.isTrue(decoded.ok, path)
      return decoded.ok ? decoded.value : undefined!
    }
    for (const path of ["agent/state/extensions/foo", "agent/state/extensions/foo/x.json", "web/foo/state", "web/foo/state/db"]) {
      assert.isTrue(inRestoreScope(ext(path), "foo"), path)
      assert.isTrue(inRestoreScope(ext(path), undefined), path)
    }
    for (const path of ["agent/state/extensions/foobar/x", "agent/state/extensions", "agent/state/a.json", "web/bar/state/x", "agent/MEMORY.md"]) {
      assert.isFalse(inRestoreScope(ext(path), "foo"), path)
    }
  })
})

describe("snapshotTreeProblem", () => {
  const check = (entries: ReadonlyArray<readonly [string, "file" | "directory" | "symlink"]>) => {
    const paths = entries.map(([p]) => {
      const decoded = decodeSnapshotPath(p)
      if (!decoded.ok) throw new Error(p)
      return decoded.value
    })
    return snapshotTreeProblem(entries.map(([, type]) => ({ type })), paths)
  }

  it("accepts a tree a walk makes, in any order", () => {
    const tree = [
      ["agent/state", "directory"],
      ["agent/state/a", "file"],
      ["agent/state/sub", "directory"],
      ["agent/state/sub/link", "symlink"],
      ["agent/MEMORY.md", "file"],
      ["agent/sessions", "symlink"],
      ["web/foo/state", "directory"],
      ["web/foo/state/db", "file"]
    ] as const
    assert.isUndefined(check(tree))
    assert.isUndefined(check([...tree].reverse()))
  })

  it("refuses an entry below a link, below a file, below nothing recorded, and a path recorded twice", () => {
    assert.deepStrictEqual(check([["agent/state", "directory"], ["agent/state/out", "symlink"], ["agent/state/out/x", "file"]]), {
      index: 2,
      why: "lies below \"agent/state/out\", which the manifest records as a symlink"
    })
    assert.match(check([["agent/state", "directory"], ["agent/state/f", "file"], ["agent/state/f/x", "file"]])!.why, /records as a file/)
    assert.match(check([["agent/state/x/y", "file"]])!.why, /"agent\/state\/x", which the manifest does not record as a directory/)
    assert.deepStrictEqual(check([["agent/state", "directory"], ["agent/state/a", "file"], ["agent/state/a", "symlink"]]), { index: 2, why: "is recorded twice" })
  })
})
