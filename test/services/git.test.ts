import { assert, describe, it } from "@effect/vitest"
import { gitEnvironment, gitGlobalArgs } from "../../src/services/internal/git.js"

describe("the git runner's isolation (values)", () => {
  it("the environment is built from nothing: config off, fixed identity, only PATH passed on", () => {
    const write = gitEnvironment({ pathVar: "/usr/bin", read: false, nowMs: 1_700_000_000_500 })
    assert.strictEqual(write.GIT_CONFIG_GLOBAL, "/dev/null")
    assert.strictEqual(write.GIT_CONFIG_SYSTEM, "/dev/null")
    assert.strictEqual(write.GIT_CONFIG_NOSYSTEM, "1")
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

  it("every call names its repository and disables hooks and signing", () => {
    const args = gitGlobalArgs("/h/.git", "/h")
    assert.includeMembers([...args], ["--git-dir=/h/.git", "--work-tree=/h", "core.hooksPath=/dev/null", "commit.gpgsign=false", "safe.directory=/h"])
  })
})
