import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { configuredWebDataRoot, resolveWebDataRoot, WEB_DATA_DIR_ENV } from "../../src/domain/WebPaths.js"

const pathPart = fc.stringMatching(/^[a-z0-9._-]{1,12}$/).filter((s) => s !== "." && s !== "..")
const absPath = fc.array(pathPart, { minLength: 1, maxLength: 4 }).map((parts) => "/" + parts.join("/"))
const relPath = fc.array(pathPart, { minLength: 1, maxLength: 3 }).map((parts) => parts.join("/"))
const setting = fc.option(fc.oneof(absPath, relPath, fc.constant("")), { nil: undefined })

describe("the web data root (TD1): one resolution for the backups, the doctor and the tiers", () => {
  it.prop(
    "configured: explicit option > non-empty $PI_WEB_DATA_DIR (relative to cwd) > none",
    [setting, setting, absPath],
    ([explicit, env, cwd]) => {
      const r = configuredWebDataRoot({ explicit, env: (n) => (n === WEB_DATA_DIR_ENV ? env : undefined), cwd })
      if (explicit !== undefined && explicit !== "") assert.strictEqual(r, NodePath.resolve(cwd, explicit))
      else if (env !== undefined && env !== "") assert.strictEqual(r, NodePath.resolve(cwd, env))
      else assert.isUndefined(r)
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.prop(
    "the tiers' root is the configured one, else the default; a dev instance ignores the environment only",
    [setting, setting, absPath, absPath, fc.constantFrom("prod" as const, "dev" as const, undefined)],
    ([explicit, env, home, cwd, instance]) => {
      const input = { explicit, instance, env: (n: string) => (n === WEB_DATA_DIR_ENV ? env : undefined), home, cwd }
      const r = resolveWebDataRoot(input)
      const configured = configuredWebDataRoot(input)
      if (explicit !== undefined && explicit !== "") assert.strictEqual(r, configured)
      else if (instance === "dev") assert.strictEqual(r, NodePath.join(home, ".pi", "web-dev", "data"))
      else assert.strictEqual(r, configured ?? NodePath.join(home, ".pi", "web", "data"))
    },
    { fastCheck: { numRuns: 200 } }
  )
})
