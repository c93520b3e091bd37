/**
 * Measurement 5: cold start of `node dist/cli/main.js status --agent-dir <small dir>` vs `node -e 0`, and
 * where the time goes: the import time of each heavy dependency, each in a fresh process.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { buildTenant, ensureWorkRoot, removeTree, tenantDirOf } from "./fixtures.js"
import type { Measurement, Row } from "./result.js"
import { REPO_DIR, run, summarize } from "./util.js"

export interface CliOptions {
  readonly root: string
  readonly reps: number
  readonly log: (line: string) => void
}

export const CLI_ENTRY = path.join(REPO_DIR, "dist", "cli", "main.js")

/** Modules whose import cost explains a cold start, cheapest first. */
const IMPORTS: ReadonlyArray<readonly [string, string]> = [
  ["effect", "effect"],
  ["@effect/platform-node", "@effect/platform-node"],
  ["@effect/cli", "@effect/cli"],
  ["library root (dist/index.js)", path.join(REPO_DIR, "dist", "index.js")],
  ["cli entry (dist/cli/main.js, no args)", CLI_ENTRY]
]

const importMs = async (specifier: string): Promise<number> => {
  const url = specifier.startsWith("/") ? `file://${specifier}` : specifier
  const code = `const t=performance.now();await import(${JSON.stringify(url)});process.stderr.write("@@IMPORT "+(performance.now()-t)+"\\n")`
  const r = await run(process.execPath, ["--input-type=module", "-e", code])
  const m = /@@IMPORT ([\d.]+)/.exec(r.stderr)
  if (m === null) throw new Error(`import of ${specifier} failed: ${r.stderr.slice(0, 400)}`)
  return Number(m[1])
}

export const benchCli = async (o: CliOptions): Promise<Measurement> => {
  if (!fs.existsSync(CLI_ENTRY)) {
    return { name: "5 cli", rows: [], notes: { skipped: `${CLI_ENTRY} is missing: run \`npm run build\` first` } }
  }
  const agentDir = path.join(o.root, "cli-agent")
  ensureWorkRoot(agentDir)
  buildTenant(tenantDirOf(agentDir, "small"), "small", { runs: 5, filesPerRun: 4 })
  const cli: Array<number> = []
  const bare: Array<number> = []
  let exitCode: number | null = null
  try {
    for (let rep = 0; rep < o.reps; rep++) {
      const order = rep % 2 === 0 ? ["cli", "node"] : ["node", "cli"]
      for (const who of order) {
        if (who === "cli") {
          const r = await run(process.execPath, [CLI_ENTRY, "status", "--agent-dir", agentDir])
          exitCode = r.code
          cli.push(r.wallMs)
        } else {
          bare.push((await run(process.execPath, ["-e", "0"])).wallMs)
        }
      }
    }
    const imports: Array<Row> = []
    for (const [label, specifier] of IMPORTS) {
      const times: Array<number> = []
      for (let rep = 0; rep < Math.max(3, Math.ceil(o.reps / 2)); rep++) {
        try {
          times.push(await importMs(specifier))
        } catch (e) {
          o.log(`cli: ${String(e)}`)
          break
        }
      }
      if (times.length > 0) imports.push({ label: `import ${label}`, unit: "ms", ours: summarize(times) })
    }
    const cliS = summarize(cli)
    const bareS = summarize(bare)
    return {
      name: "5 cli",
      rows: [
        { label: "status cold start", unit: "ms", ours: cliS, baseline: bareS, baselineName: "node -e 0", ratio: cliS.median / bareS.median },
        ...imports
      ],
      notes: { statusExitCode: exitCode, reps: o.reps }
    }
  } finally {
    removeTree(agentDir)
  }
}
