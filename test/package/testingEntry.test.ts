/**
 * The `pi-agent-storage/testing` subpath (docs/testing.md "Testing your code against the simulated world"): its modules
 * import `@effect/platform` (an optional peer dependency), so they stay out of the root entry's import graph.
 * Checked on the built `dist/` (npm test builds first): the import graph of each entry, and the package.json
 * fields that publish the subpath.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { assert, describe, it } from "vitest"

const REPO = fileURLToPath(new URL("../..", import.meta.url))
const DIST = path.join(REPO, "dist")

/**
 * The built modules a module reaches through its static and dynamic imports, and the packages (bare
 * specifiers, by package name) among them.
 */
const importGraph = (entry: string): { readonly files: Set<string>; readonly packages: Set<string> } => {
  const seen = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    const source = fs.readFileSync(file, "utf8")
    const specifiers = [
      ...source.matchAll(/(?:^|\n)\s*(?:import|export)\s[^"']*?from\s*["']([^"']+)["']/g),
      ...source.matchAll(/(?:^|\n)\s*import\s*["']([^"']+)["']/g),
      ...source.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)
    ].map((m) => m[1]!)
    for (const specifier of specifiers) {
      if (specifier.startsWith(".")) visit(path.resolve(path.dirname(file), specifier))
      else if (!specifier.startsWith("node:")) packages.add(specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!)
    }
  }
  visit(entry)
  return { files: seen, packages }
}

describe("pi-agent-storage/testing", () => {
  it("the root entry reaches only effect and yaml, never the testing modules; the testing entry adds @effect/platform and no other package", () => {
    if (!fs.existsSync(path.join(DIST, "testing.js"))) throw new Error("dist/testing.js is missing: `npm run build` first")
    const root = importGraph(path.join(DIST, "index.js"))
    const testing = importGraph(path.join(DIST, "testing.js"))
    for (const own of ["testing.js", path.join("layers", "MemoryPlatformFileSystem.js")]) {
      assert.isFalse(root.files.has(path.join(DIST, own)), `the root entry imports ${own}`)
    }
    assert.isTrue(testing.files.has(path.join(DIST, "layers", "MemoryPlatformFileSystem.js")))
    // The root imports nothing but `effect` and `yaml`: the Effect install line is all an Effect caller runs.
    assert.deepStrictEqual([...root.packages].sort(), ["effect", "yaml"])
    assert.deepStrictEqual([...testing.packages].filter((p) => !root.packages.has(p)), ["@effect/platform"])
  })

  it("package.json publishes the subpath (types + import) and @effect/platform as an optional peer", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as {
      exports: Record<string, unknown>
      peerDependencies: Record<string, string>
      peerDependenciesMeta: Record<string, { optional?: boolean }>
      devDependencies: Record<string, string>
    }
    assert.deepStrictEqual(pkg.exports["./testing"], { types: "./dist/testing.d.ts", import: "./dist/testing.js" })
    for (const file of ["testing.js", "testing.d.ts"]) assert.isTrue(fs.existsSync(path.join(DIST, file)), file)
    assert.strictEqual(pkg.peerDependencies["@effect/platform"], "^0.97.2")
    assert.isTrue(pkg.peerDependenciesMeta["@effect/platform"]?.optional)
    // The version the tests run against satisfies the range.
    assert.match(pkg.devDependencies["@effect/platform"]!, /^0\.97\.\d+$/)
  })

  it("npm pack ships every module the testing entry loads, with its declarations", async () => {
    const packed = await promisify(execFile)("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: REPO })
    const files = new Set((JSON.parse(packed.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path))
    for (const module of importGraph(path.join(DIST, "testing.js")).files) {
      const rel = path.relative(REPO, module)
      assert.isTrue(files.has(rel), `${rel} is not packed`)
      assert.isTrue(files.has(rel.replace(/\.js$/, ".d.ts")), `${rel}'s declarations are not packed`)
    }
  }, 60_000)
})
