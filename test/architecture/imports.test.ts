/**
 * No import circle in `src/` (docs/architecture.md "Architecture": domain → services → layers → facade/CLI, nothing runs
 * back). Every edge counts: static imports, `import type`, re-exports and dynamic `import()`s, since a
 * type-only edge is still a pair of modules that must be read together and a lazy one still loads both.
 * Also: no `@deprecated` in `src/` (a 0.x library keeps no deprecated surface; it removes the old name).
 *
 * Each rule is also run against a planted violation, so the guard is known to bite.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import ts from "typescript"

const SRC = fileURLToPath(new URL("../../src/", import.meta.url))

interface Source {
  /** Path relative to `src/`, with `/`. */
  readonly name: string
  readonly text: string
}

/**
 * The relative module specifiers a file imports, re-exports or loads lazily (`import()`, `import("…").T`):
 * TypeScript's pre-processor, which reads only the imports (a full parse of src/ costs seconds).
 */
const specifiers = (source: Source): Array<string> =>
  ts.preProcessFile(source.text, true, true).importedFiles.map((f) => f.fileName).filter((s) => s.startsWith("."))

/** `./x.js` from `facade/tiers.ts` → `facade/x.ts` (the sources' own names), or null when outside them. */
const resolve = (from: string, specifier: string, names: ReadonlySet<string>): string | null => {
  const joined = Path.posix.normalize(Path.posix.join(Path.posix.dirname(from), specifier))
  const candidates = [joined.replace(/\.js$/, ".ts"), joined, `${joined}.ts`, `${joined}/index.ts`]
  return candidates.find((c) => names.has(c)) ?? null
}

/** Each import circle once, as the modules that import each other (sorted, the first repeated at the end). */
export const importCircles = (sources: ReadonlyArray<Source>): Array<string> => {
  const names = new Set(sources.map((s) => s.name))
  const edges = new Map<string, Array<string>>()
  for (const s of sources) {
    const targets = specifiers(s).flatMap((spec) => {
      const to = resolve(s.name, spec, names)
      return to === null ? [] : [to]
    })
    edges.set(s.name, [...new Set(targets)].sort())
  }
  // Tarjan's strongly connected components; a component of two or more modules (or a self-import) is a circle.
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<string> = []
  let next = 0
  const connect = (v: string): void => {
    index.set(v, next)
    low.set(v, next)
    next++
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (edges.get(v) ?? []).includes(v)) found.push([...component.sort(), component[0]].join(" → "))
    }
  }
  for (const v of [...names].sort()) if (!index.has(v)) connect(v)
  return found.sort()
}

/** `@deprecated` tags in doc comments (JSDoc), by file and line. */
export const deprecatedTags = (sources: ReadonlyArray<Source>): Array<string> =>
  sources.flatMap((source) =>
    source.text.split("\n").flatMap((line, i) => (/^\s*(\/\*\*|\*).*@deprecated\b/.test(line) ? [`${source.name}:${i + 1}`] : []))
  )

const tsFiles = (root: string): Array<string> =>
  (Fs.readdirSync(root, { recursive: true, encoding: "utf8" }) as Array<string>).filter((f) => f.endsWith(".ts")).sort()
const allSources = (): Array<Source> =>
  tsFiles(SRC).map((f) => {
    const name = f.split(Path.sep).join("/")
    return { name, text: Fs.readFileSync(Path.join(SRC, name), "utf8") }
  })

describe("module graph of src/", () => {
  it("has no import circle (static, type-only, re-export or dynamic import)", () => {
    const sources = allSources()
    assert.isAtLeast(sources.length, 50, "the guard read src/")
    assert.deepStrictEqual(importCircles(sources), [])
  })

  it("has no @deprecated name", () => {
    assert.deepStrictEqual(deprecatedTags(allSources()), [])
  })

  it("the guards bite: a planted circle through each kind of edge and a planted @deprecated are found", () => {
    const a = (text: string): Source => ({ name: "facade/a.ts", text })
    const b = { name: "facade/b.ts", text: `import type { A } from "./a.js"\nexport type B = A` }
    const c = { name: "domain/c.ts", text: `export const c = 1` }
    assert.deepStrictEqual(importCircles([a(`export const a = async () => (await import("./b.js"))`), b, c]), ["facade/a.ts → facade/b.ts → facade/a.ts"])
    assert.deepStrictEqual(importCircles([a(`export * from "./b.js"`), b, c]), ["facade/a.ts → facade/b.ts → facade/a.ts"])
    assert.deepStrictEqual(importCircles([a(`import { c } from "../domain/c.js"\nexport type A = import("./b.js").B`), b, c]), [
      "facade/a.ts → facade/b.ts → facade/a.ts"
    ])
    // A chain that does not come back, a package import and a name mentioned in a string are not circles.
    assert.deepStrictEqual(importCircles([a(`import { c } from "../domain/c.js"\nimport "effect"\nconst s = "./b.js"`), b, c]), [])

    assert.deepStrictEqual(deprecatedTags([{ name: "x.ts", text: `/** @deprecated use y. */\nexport const x = 1\nconst s = "@deprecated"` }]), ["x.ts:1"])
    assert.deepStrictEqual(deprecatedTags([{ name: "x.ts", text: `/**\n * Old.\n * @deprecated use y.\n */\nexport const x = 1` }]), ["x.ts:3"])
  })
})
