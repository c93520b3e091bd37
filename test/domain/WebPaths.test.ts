import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { resolveWebDataRoot, WEB_DATA_DIR_ENV } from "../../src/domain/WebPaths.js"

const pathPart = fc.stringMatching(/^[a-z0-9._-]{1,12}$/).filter((s) => s !== "." && s !== "..")
const absPath = fc.array(pathPart, { minLength: 1, maxLength: 4 }).map((parts) => "/" + parts.join("/"))
const relPath = fc.array(pathPart, { minLength: 1, maxLength: 3 }).map((parts) => parts.join("/"))
const setting = fc.option(fc.oneof(absPath, relPath, fc.constant("")), { nil: undefined })

describe("the web data root (TD1): one resolution for the tiers, the backups, the doctor and status", () => {
  it.prop(
    "explicit option > a dev instance's own root > non-empty $PI_WEB_DATA_DIR (relative to cwd) > ~/.pi/web/data; always absolute",
    [setting, setting, absPath, absPath, fc.constantFrom("prod" as const, "dev" as const, undefined)],
    ([explicit, env, home, cwd, instance]) => {
      const r = resolveWebDataRoot({ explicit, instance, env: (n: string) => (n === WEB_DATA_DIR_ENV ? env : undefined), home, cwd })
      if (explicit !== undefined && explicit !== "") assert.deepStrictEqual(r, { path: NodePath.resolve(cwd, explicit), source: "option" })
      else if (instance === "dev") assert.deepStrictEqual(r, { path: NodePath.join(home, ".pi", "web-dev", "data"), source: "dev-instance" })
      else if (env !== undefined && env !== "") assert.deepStrictEqual(r, { path: NodePath.resolve(cwd, env), source: "env" })
      else assert.deepStrictEqual(r, { path: NodePath.join(home, ".pi", "web", "data"), source: "default" })
      assert.isTrue(NodePath.isAbsolute(r.path))
    },
    { fastCheck: { numRuns: 300 } }
  )
})
