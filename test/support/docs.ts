/**
 * The documentation's markdown files: the README, BENCHMARKS.md and every page under docs/ (sorted, paths relative to
 * the repository root with `/`). The tests that read documentation read it from here.
 */
import * as fs from "node:fs"
import * as path from "node:path"

export const documentationFiles = (root: string): Array<string> => {
  const pages: Array<string> = []
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(rel)
      else if (entry.isFile() && entry.name.endsWith(".md")) pages.push(rel)
    }
  }
  walk("docs")
  return ["README.md", "BENCHMARKS.md", ...pages.sort()]
}

/** The markdown outside fenced code blocks, with inline code spans blanked (a link in code is not a link). */
const prose = (markdown: string): string => {
  let fence = false
  return markdown.split("\n").map((line) => {
    if (/^\s*```/.test(line)) {
      fence = !fence
      return ""
    }
    return fence ? "" : line.replace(/(`+)[^`]*?\1/g, "")
  }).join("\n")
}

/** The targets of the inline links and images of a page: `[text](target)`, `![alt](target "title")`. */
export const linkTargets = (markdown: string): Array<string> =>
  [...prose(markdown).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!)
