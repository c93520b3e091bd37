/**
 * `pi-storage doctor`: the read-only scan's findings as a table; exit 1 when any is a warning or worse.
 * `--json` prints the library's `DoctorReport` with the agent dir and the web data root it checked.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as Effect from "effect/Effect"
import { nodeEnv } from "../../layers/NodeHost.js"
import { configuredWebDataRoot, defaultWebDataRoot } from "../../domain/WebPaths.js"
import type { DoctorReport } from "../../domain/Findings.js"
import { type CliContext, out, printJson, withStack } from "../context.js"
import { ExitCode } from "../exit.js"
import { joinShown, type Paint, type Shown, severityCounts, severityRank, severitySummary, table, txt } from "../format.js"

const SEVERITY_STYLE = { error: "red", warning: "yellow", info: "dim" } as const

export const renderDoctor = (paint: Paint, agentDir: string, report: DoctorReport): Shown => {
  const head = txt`Checked ${agentDir} (${report.scanned} entries${report.truncated ? ", truncated: the scan budget ran out" : ""}).\n`
  if (report.findings.length === 0) return txt`${head}${paint("green", "No findings.")}\n`
  const sorted = [...report.findings].sort((a, b) => severityRank(a.severity) - severityRank(b.severity) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const rows = sorted.map((f) => [paint(SEVERITY_STYLE[f.severity], f.severity), f.code, f.path, f.message])
  const fixes = sorted.flatMap((f) => (f.fix === undefined ? [] : [txt`  ${f.path}: ${f.fix}\n`]))
  return txt`${head}\n${table([{ header: "SEVERITY" }, { header: "CODE" }, { header: "PATH" }, { header: "MESSAGE" }], rows, paint)}${
    fixes.length > 0 ? txt`\n${paint("bold", "Suggested fixes")}\n${joinShown(fixes)}` : ""
  }\n${severitySummary(severityCounts(sorted))}\n`
}

export const doctorExitCode = (report: DoctorReport): number =>
  report.findings.some((f) => f.severity !== "info") ? ExitCode.findings : ExitCode.ok

/**
 * The web data root the doctor also checks: the one configured (`--web-data-root`, else `$PI_WEB_DATA_DIR`),
 * else the web host's default root when it exists; `undefined` when there is none to check.
 */
export const webDataRootFor = (flag: string | undefined, env: (name: string) => string | undefined, home: string, cwd: string): string | undefined => {
  const configured = configuredWebDataRoot({ explicit: flag, env, cwd })
  if (configured !== undefined) return configured
  const fallback = defaultWebDataRoot(home)
  return NodeFs.existsSync(fallback) ? fallback : undefined
}

export const doctor = (ctx: CliContext, options: { readonly webDataRoot: string | undefined; readonly json: boolean }) =>
  withStack(ctx, (s) =>
    Effect.gen(function*() {
      const agentDir = yield* s.AgentDir
      const webDataRoot = webDataRootFor(options.webDataRoot, nodeEnv, NodeOs.homedir(), process.cwd())
      const report = yield* (yield* s.Doctor).doctor(webDataRoot === undefined ? {} : { webDataRoot })
      // JSON names what was read (the agent dir, the web data root or null) before the library's report.
      yield* options.json
        ? printJson({ agentDir: agentDir.path, webDataRoot: webDataRoot ?? null, ...report })
        : out(renderDoctor(ctx.paint, agentDir.path, report))
      ctx.status.raise(doctorExitCode(report))
    }))
