/**
 * The documentation's links hold: every relative link and `#anchor` between README.md, BENCHMARKS.md and
 * docs/**.md resolves (a file that exists; an anchor that is a heading of the page it names, computed as GitHub
 * computes it), and the README stays a guide a newcomer reads in ten minutes (at most 300 lines).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "vitest"
import { documentationFiles, linkTargets } from "../support/docs.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

/** GitHub's anchor for a heading text: lower case, inline markup and punctuation dropped, spaces to hyphens. */
export const slug = (heading: string): string =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\p{M} _-]/gu, "").replace(/ /g, "-")

/** Every anchor a page has: its headings' slugs, a repeated one suffixed -1, -2 … as GitHub does. */
export const anchorsOf = (markdown: string): Set<string> => {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  let fence = false
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fence = !fence
    const heading = fence ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading === null) continue
    const base = slug(heading[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8")

describe("documentation links", () => {
  it("headings get GitHub's anchors", () => {
    assert.strictEqual(slug("User profile (USER.md)"), "user-profile-usermd")
    assert.strictEqual(slug("Installing: what each caller gets"), "installing-what-each-caller-gets")
    assert.deepStrictEqual(
      [...anchorsOf("# A `@effect/platform` FileSystem, with faults\n## Errors\n```\n# not a heading\n```\n## Errors\n")],
      ["a-effectplatform-filesystem-with-faults", "errors", "errors-1"]
    )
    assert.deepStrictEqual(linkTargets("[a](x.md#y) `[no](z.md)` ![i](p.png \"t\")\n```\n[no](w.md)\n```\n[b](https://e.org)"), ["x.md#y", "p.png", "https://e.org"])
  })

  const files = documentationFiles(ROOT)

  it("covers the README, BENCHMARKS.md and the docs pages", () => {
    for (const f of ["README.md", "BENCHMARKS.md", "docs/README.md", "docs/ui/README.md"]) assert.include(files, f)
  })

  for (const file of files) {
    it(`${file}: every relative link and anchor resolves`, () => {
      const broken: Array<string> = []
      for (const target of linkTargets(read(file))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // https:, mailto: … are not ours to check
        const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined]
        const resolved = pathPart === "" ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(pathPart)))
        if (resolved.startsWith("..") || !fs.existsSync(path.join(ROOT, resolved))) {
          broken.push(`${target}: no ${resolved}`)
          continue
        }
        if (anchor === undefined) continue
        if (!resolved.endsWith(".md")) broken.push(`${target}: an anchor into a file that is not markdown`)
        else if (!anchorsOf(read(resolved)).has(anchor)) broken.push(`${target}: ${resolved} has no heading #${anchor}`)
      }
      assert.deepStrictEqual(broken, [])
    })
  }

  it("the README is a guide: at most 300 lines", () => {
    const lines = read("README.md").split("\n")
    assert.isAtMost(lines.at(-1) === "" ? lines.length - 1 : lines.length, 300)
  })
})
