/**
 * Every code block marked runnable in the README and the docs/ pages is extracted and run, so the documentation
 * cannot rot (a block runs wherever it moves: every docs/**.md is read). The convention: an
 * HTML comment `<!-- runnable -->` on the line before a ```ts or ```js fence. A `ts` block runs with tsx, a
 * `js` block with plain `node` (as a JavaScript caller on Node 20 would: no TypeScript, no `await using`).
 * Blocks import the package by its name: they are written under `<repo>/.readme-blocks/`, inside the
 * package, so `pi-agent-storage` and `pi-agent-storage/promise` resolve to the built `dist/` (npm test
 * builds first). Each block runs in a fresh temp dir as its working directory, with
 * `$PI_ADAPTATIVE_CODING_AGENT_DIR` pointing at a fresh agent dir there; a block fails the test by throwing.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { documentationFiles } from "./support/docs.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const TSX = path.join(ROOT, "node_modules", "tsx", "dist", "cli.mjs")
const BLOCKS_DIR = path.join(ROOT, ".readme-blocks")

export interface RunnableBlock {
  readonly lang: "ts" | "js"
  readonly code: string
  /** 1-based line of the opening fence, for the test name. */
  readonly line: number
}

/** The blocks marked `<!-- runnable -->` (the marker on the line just before the fence). */
export const runnableBlocks = (markdown: string): Array<RunnableBlock> => {
  const lines = markdown.split("\n")
  const blocks: Array<RunnableBlock> = []
  for (let i = 1; i < lines.length; i++) {
    const fence = /^```(ts|js)\s*$/.exec(lines[i]!)
    if (fence === null || lines[i - 1]!.trim() !== "<!-- runnable -->") continue
    const end = lines.findIndex((l, j) => j > i && l.startsWith("```"))
    if (end === -1) throw new Error(`line ${i + 1}: unterminated runnable block`)
    blocks.push({ lang: fence[1] as "ts" | "js", code: lines.slice(i + 1, end).join("\n") + "\n", line: i + 1 })
    i = end
  }
  return blocks
}

const run = (command: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, command, { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })

/** The runnable blocks of the README and of every docs/ page, each with the file it is in. */
const blocks = documentationFiles(ROOT)
  .filter((file) => file === "README.md" || file.startsWith("docs/"))
  .flatMap((file) => runnableBlocks(fs.readFileSync(path.join(ROOT, file), "utf8")).map((block) => ({ ...block, file })))

describe("runnable blocks of the README and docs/", () => {
  it("the marker convention finds blocks and only marked ones", () => {
    const sample = "```ts\nnot me\n```\n<!-- runnable -->\n```js\nconsole.log(1)\n```\n<!-- runnable -->\n\n```ts\nnot me either\n```\n"
    expect(runnableBlocks(sample)).toEqual([{ lang: "js", code: "console.log(1)\n", line: 5 }])
    // The README keeps its examples honest: one per face (Promise, Effect, extension, test recipe) at least.
    expect(blocks.filter((b) => b.file === "README.md").length).toBeGreaterThanOrEqual(4)
    expect(blocks.length).toBeGreaterThanOrEqual(10)
  })

  for (const block of blocks) {
    it.concurrent(`${block.file} line ${block.line} (${block.lang}) runs and exits 0`, async () => {
      fs.mkdirSync(BLOCKS_DIR, { recursive: true })
      const name = `${block.file.replace(/\.md$/, "").replace(/\//g, "-")}-line-${block.line}`
      const file = path.join(BLOCKS_DIR, `${name}.${block.lang === "ts" ? "mts" : "mjs"}`)
      fs.writeFileSync(file, block.code)
      const work = fs.mkdtempSync(path.join(os.tmpdir(), "pi-readme-"))
      try {
        // The web data root is the default one (TD1), under a HOME of the block's own: a block writing through
        // `extensionContext(id)` or snapshotting never touches the real ~/.pi/web/data.
        const env: NodeJS.ProcessEnv = { ...process.env, PI_ADAPTATIVE_CODING_AGENT_DIR: path.join(work, "agent"), HOME: work }
        delete env["PI_WEB_DATA_DIR"]
        const result = await run(block.lang === "ts" ? [TSX, file] : [file], work, env)
        expect(result.stderr).not.toMatch(/Error|error TS/)
        expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0)
      } finally {
        fs.rmSync(work, { recursive: true, force: true })
        fs.rmSync(file, { force: true })
      }
    })
  }
})
