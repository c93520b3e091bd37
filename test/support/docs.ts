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
