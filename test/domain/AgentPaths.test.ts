import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import {
  AGENT_DIR_ENV,
  agentPaths,
  CANONICAL_ROOT_ENTRIES,
  canonicalEntry,
  LEGACY_ROOT_ENTRIES,
  resolveAgentDir
} from "../../src/domain/AgentPaths.js"
import { resolveWebDataRoot, tierPaths } from "../../src/domain/WebPaths.js"

const pathPart = fc.stringMatching(/^[a-z0-9._-]{1,12}$/).filter((s) => s !== "." && s !== "..")
const absPath = fc.array(pathPart, { minLength: 1, maxLength: 4 }).map((parts) => "/" + parts.join("/"))
const relPath = fc.array(pathPart, { minLength: 1, maxLength: 3 }).map((parts) => parts.join("/"))

describe("agent-dir resolution (LA1)", () => {
  it.prop(
    "explicit option > non-empty env (relative to cwd) > ~/.pi/agent",
    [fc.option(fc.oneof(absPath, relPath, fc.constant("")), { nil: undefined }), fc.option(fc.oneof(absPath, relPath, fc.constant("")), { nil: undefined }), absPath, absPath],
    ([explicit, env, home, cwd]) => {
      const r = resolveAgentDir({ explicit, env: (n) => (n === AGENT_DIR_ENV ? env : undefined), home, cwd })
      if (explicit !== undefined && explicit !== "") {
        assert.deepStrictEqual(r, { path: NodePath.resolve(cwd, explicit), source: "option" })
      } else if (env !== undefined && env !== "") {
        assert.deepStrictEqual(r, { path: NodePath.resolve(cwd, env), source: "env" })
      } else {
        assert.deepStrictEqual(r, { path: NodePath.join(home, ".pi", "agent"), source: "default" })
      }
      assert.isTrue(NodePath.isAbsolute(r.path))
    }
  )
})

describe("the path module (LA2) and the canonical table (LA3)", () => {
  it("places every datum where the layout says", () => {
    const p = agentPaths("/a")
    assert.deepStrictEqual(
      [p.authFile, p.settingsFile, p.modelsFile, p.keybindingsFile, p.memoryFile, p.userFile, p.systemFile],
      ["/a/auth.json", "/a/settings.json", "/a/models.json", "/a/keybindings.json", "/a/MEMORY.md", "/a/USER.md", "/a/SYSTEM.md"]
    )
    assert.deepStrictEqual(
      [p.okfMemoryDir, p.skillsDir, p.extensionsDir, p.promptsDir, p.themesDir, p.profilesDir, p.directoryProfileSettings("x")],
      ["/a/okf-memory", "/a/skills", "/a/extensions", "/a/prompts", "/a/themes", "/a/profiles", "/a/profiles/directories/x/settings.json"]
    )
    assert.deepStrictEqual(
      [p.stateDir(), p.stateDir("trust.json"), p.configBackupsDir, p.extensionStateDir("n"), p.cacheDir("x"), p.cacheDir("y", "z"), p.extensionCacheDir("n")],
      ["/a/state", "/a/state/trust.json", "/a/state/backups/config", "/a/state/extensions/n", "/a/cache/x", "/a/cache/y/z", "/a/cache/extensions/n"]
    )
    assert.deepStrictEqual(
      [p.configDir(), p.extensionConfigDir("n")],
      ["/a/config", "/a/config/extensions/n"]
    )
    assert.deepStrictEqual(
      [p.restoreAsideDir, p.userProfileStateDir, p.directoryProfilesDir],
      ["/a/state/restore-aside", "/a/state/user-profile", "/a/profiles/directories"]
    )
    assert.deepStrictEqual(
      [p.binDir, p.workRoot, p.workRunDir("c", "t", "r"), p.runtimesDir, p.modelsDir, p.sessionsDir, p.npmDir, p.gitDir, p.worktreesDir],
      ["/a/bin", "/a/work", "/a/work/c/t/r", "/a/runtimes", "/a/models", "/a/sessions", "/a/npm", "/a/git", "/a/worktrees"]
    )
  })

  it("every root path the module produces is in the canonical table, with the right kind", () => {
    const p = agentPaths("/a")
    const produced: Array<[string, "file" | "directory"]> = [
      [p.authFile, "file"], [p.settingsFile, "file"], [p.modelsFile, "file"], [p.keybindingsFile, "file"], [p.memoryFile, "file"],
      [p.userFile, "file"], [p.systemFile, "file"], [p.okfMemoryDir, "directory"], [p.skillsDir, "directory"], [p.extensionsDir, "directory"],
      [p.promptsDir, "directory"], [p.themesDir, "directory"], [p.profilesDir, "directory"], [p.stateDir(), "directory"], [p.cacheDir(), "directory"],
      [p.configDir(), "directory"], [p.binDir, "directory"], [p.workRoot, "directory"], [p.runtimesDir, "directory"], [p.modelsDir, "directory"], [p.sessionsDir, "directory"],
      [p.npmDir, "directory"], [p.gitDir, "directory"], [p.worktreesDir, "directory"]
    ]
    for (const [path, kind] of produced) assert.strictEqual(canonicalEntry(NodePath.basename(path))?.kind, kind, path)
    assert.strictEqual(new Set(CANONICAL_ROOT_ENTRIES.map((e) => e.name)).size, CANONICAL_ROOT_ENTRIES.length)
    for (const legacy of LEGACY_ROOT_ENTRIES) {
      assert.isUndefined(canonicalEntry(legacy.name), `${legacy.name} is legacy, not canonical`)
      assert.isDefined(canonicalEntry(legacy.destination[0]!), `${legacy.name} goes under a canonical root`)
    }
  })
})

describe("web data paths (TD1, TD2)", () => {
  it("explicit root > dev instance > $PI_WEB_DATA_DIR > ~/.pi/web/data; tiers are symmetric", () => {
    const base = { home: "/h", cwd: "/c" }
    const env = (v: string | undefined) => (n: string) => (n === "PI_WEB_DATA_DIR" ? v : undefined)
    assert.deepStrictEqual(resolveWebDataRoot({ ...base, env: env(undefined) }), { path: "/h/.pi/web/data", source: "default" })
    assert.deepStrictEqual(resolveWebDataRoot({ ...base, env: env("rel") }), { path: "/c/rel", source: "env" })
    assert.deepStrictEqual(resolveWebDataRoot({ ...base, env: env("/w"), instance: "dev" }), { path: "/h/.pi/web-dev/data", source: "dev-instance" })
    assert.deepStrictEqual(resolveWebDataRoot({ ...base, env: env("/w"), explicit: "/x" }), { path: "/x", source: "option" })
    assert.deepStrictEqual(tierPaths("/d", "ext"), {
      extId: "ext", extensionDir: "/d/ext", configDir: "/d/ext/config", stateDir: "/d/ext/state", cacheDir: "/d/ext/cache"
    })
  })
})
