import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "vitest"
import { findPackageRoot, packageFile } from "../../../src/layers/node/packageRoot.js"

const REPO = fileURLToPath(new URL("../../..", import.meta.url)).replace(/\/$/, "")
const temp = fs.mkdtempSync(path.join(os.tmpdir(), "pi-root-"))
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }))

describe("packageRoot", () => {
  it("is the nearest directory with a package.json at or above the module: src/, dist/ and dist/bundle/ alike", () => {
    assert.strictEqual(findPackageRoot(path.join(REPO, "src", "layers", "node")), REPO)
    assert.strictEqual(findPackageRoot(path.join(REPO, "dist", "bundle")), REPO)
    assert.strictEqual(packageFile("build", "Release", "fsat.node"), path.join(REPO, "build", "Release", "fsat.node"))
  })

  it("stops at the first package.json, and answers undefined where there is none up to /", () => {
    const pkg = path.join(temp, "node_modules", "pi-agent-storage")
    fs.mkdirSync(path.join(pkg, "dist", "bundle"), { recursive: true })
    fs.writeFileSync(path.join(pkg, "package.json"), "{}")
    assert.strictEqual(findPackageRoot(path.join(pkg, "dist", "bundle")), pkg)
    const bare = path.join(temp, "bare", "a")
    fs.mkdirSync(bare, { recursive: true })
    const found = findPackageRoot(bare)
    assert.isTrue(found === undefined || !found.startsWith(temp), `found ${found}`)
  })
})
