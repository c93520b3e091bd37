/**
 * `config snapshot`'s human output, alone (format.ts and nothing else): the command tree, the short route and
 * the CLI's clean-scan answer (configFast.ts) print a snapshot with this one function.
 */
import type { SnapshotResult } from "../../services/ConfigHistory.js"
import { countOf, joinShown, type Paint, type Shown, txt } from "../format.js"

export const short = (revision: string | null) => (revision === null ? "none" : revision.slice(0, 12))

const renderSkipped = (paint: Paint, skipped: SnapshotResult["skipped"]): Shown =>
  skipped.length === 0 ? joinShown([]) : txt`${paint("dim", "Never committed:")}\n${joinShown(skipped.map((s) => txt`  ${s.path}: ${s.reason}\n`))}`

export const renderSnapshot = (paint: Paint, r: SnapshotResult): Shown =>
  joinShown([
    r.revision === null
      ? txt`Nothing changed.\n`
      : txt`Saved ${paint("bold", short(r.revision))}: ${countOf(r.changed.length, "file")} changed\n${joinShown(r.changed.map((p) => txt`  ${p}\n`))}`,
    txt`Covered: the agent dir ${r.roots.agentDir} (its config files and config/extensions/); every extension's config/ under the web data root ${r.roots.webDataRoot}\n`,
    renderSkipped(paint, r.skipped)
  ])

