/**
 * `pi-storage doctor`: the read-only scan's findings as a table; exit 1 when any is a warning or worse.
 * `--json` prints the library's `DoctorReport` with the agent dir and the web data root it checked.
 */
import * as Effect from "effect/Effect"
import { displayText } from "../../domain/Display.js"
import { type DoctorReport, summarizeDoctor } from "../../domain/Findings.js"
import { type CliContext, out, printJson, withStack } from "../context.js"
import { ExitCode } from "../exit.js"
import { severityCounts } from "../../domain/Findings.js"
import { countOf, joinShown, type Paint, type Shown, severityRank, severitySummary, table, txt } from "../format.js"

const SEVERITY_STYLE = { error: "red", warning: "yellow", info: "dim" } as const

export const renderDoctor = (paint: Paint, agentDir: string, report: DoctorReport): Shown => {
  const head = txt`Checked ${agentDir} and the web data root ${report.webDataRoot} (${countOf(report.scanned, "entry", "entries")}${
    report.truncated ? ", truncated: the scan budget ran out; see the scan-truncated finding" : ""
  }).\n`
  if (report.findings.length === 0) return txt`${head}${paint("green", "No findings.")}\n`
  const sorted = [...report.findings].sort((a, b) => severityRank(a.severity) - severityRank(b.severity) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const rows = sorted.map((f) => [paint(SEVERITY_STYLE[f.severity], f.severity), f.code, f.path, f.message])
  const fixes = sorted.flatMap((f) => (f.fix === undefined ? [] : [txt`  ${f.path}: ${fixShown(f.fix)}\n`]))
  return txt`${head}\n${table([{ header: "SEVERITY" }, { header: "CODE" }, { header: "PATH" }, { header: "MESSAGE" }], rows, paint)}${
    fixes.length > 0 ? txt`\n${paint("bold", "Suggested fixes")}\n${joinShown(fixes)}` : ""
  }\n${severitySummary(severityCounts(sorted))}\n`
}

/**
 * A fix as a person may copy it: as it is when the screen shows it unchanged. A command holding a character the
 * screen shows escaped (a backslash, a control, a byte that is not UTF-8, in a path) would reach a shell as another
 * command: it is not printed, and `--json` carries it exactly.
 */
const fixShown = (fix: string): string =>
  displayText(fix) === fix
    ? fix
    : "its command names a path holding characters shown escaped here, so it is not printed to be copied: `doctor --json` gives it exactly (`fix`)"

export const doctorExitCode = (report: DoctorReport): number => (summarizeDoctor(report).needsAttention ? ExitCode.findings : ExitCode.ok)

export const doctor = (ctx: CliContext, options: { readonly webDataRoot: string | undefined; readonly json: boolean; readonly maxScanEntries?: number | undefined }) =>
  withStack(ctx, (s) =>
    Effect.gen(function*() {
      const agentDir = yield* s.AgentDir
      // The web data root is the Doctor's to resolve (TD1), as `status` and the backups do: the flag only overrides it.
      const report = yield* (yield* s.Doctor).doctor({
        ...(options.webDataRoot === undefined ? {} : { webDataRoot: options.webDataRoot }),
        ...(options.maxScanEntries === undefined ? {} : { maxEntries: options.maxScanEntries })
      })
      // JSON names what was read (the agent dir; the report names the web data root) before the library's report.
      yield* options.json ? printJson({ agentDir: agentDir.path, ...report }) : out(renderDoctor(ctx.paint, agentDir.path, report))
      ctx.status.raise(doctorExitCode(report))
    }))
