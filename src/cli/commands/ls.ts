/**
 * `pi-storage work ls [CATEGORY[/TENANT]]`: every run with its id, kind, state, last use and size, and the
 * entries the library does not own.
 */
import * as Effect from "effect/Effect"
import type { InventoryOptions, RunList, RunListing, RunState } from "../../services/Inventory.js"
import { type CliContext, notADirectory, outPieces, printJson, reportError, usageError, withStack } from "../context.js"
import {
  type Column,
  formatAge,
  formatApparent,
  formatEntries,
  formatSize,
  joinShown,
  type Paint,
  type Showable,
  type Shown,
  stoppedLines,
  table,
  tablePieces,
  txt
} from "../format.js"
import { parseTenantFilter } from "../parse.js"

const stateCell = (paint: Paint, state: RunState): Shown | string =>
  state === "active" ? paint("green", state) : state === "idle" ? paint("yellow", state) : state

const RUN_COLUMNS: ReadonlyArray<Column> = [
  { header: "TENANT" },
  { header: "RUN" },
  { header: "KIND" },
  { header: "STATE" },
  { header: "HELD BY" },
  { header: "LAST USE" },
  { header: "ENTRIES", align: "right" },
  { header: "DISK", align: "right" },
  { header: "APPARENT", align: "right" }
]

/** One run's cells. */
const runCells = (paint: Paint, scannedAt: number, r: RunListing): ReadonlyArray<Showable> => [
  `${r.category}/${r.tenant}`,
  r.runId,
  r.kind,
  stateCell(paint, r.state),
  r.holders.length === 0
    ? r.state === "active" ? "?" : "-"
    : r.holders.map((h) => `${h.host}:${h.pid}${h.since === null ? "" : ` since ${formatAge(h.since, scannedAt)}`}`).join(", "),
  formatAge(r.lastUsedAt, scannedAt),
  formatEntries(r.size),
  formatSize(r.size),
  formatApparent(r.size)
]

/** The listing as text, in pieces written as the reader takes them (a row's cells are made only as it is written). */
export function* runListPieces(ctx: CliContext, list: RunList, filter?: string): Generator<Shown> {
  const { paint } = ctx
  if (list.missing !== undefined && filter !== undefined) yield txt`${filter}: no such ${list.missing}\n`
  else if (list.runs.length === 0) yield txt`No work runs.\n`
  else yield* tablePieces(RUN_COLUMNS, list.runs.length, (i) => runCells(paint, list.scannedAt, list.runs[i]!), paint)
  if (list.unowned.length > 0) {
    yield txt`\n${paint("yellow", "Not owned by the library (never pruned):")}\n`
    yield table(
      [{ header: "TENANT" }, { header: "ENTRY" }, { header: "WHY" }],
      list.unowned.map((u) => [`${u.category}/${u.tenant}`, u.name, u.why]),
      paint
    )
  }
  if (list.notListed.length > 0) {
    // Never skipped in silence: a symlink (never followed) or a file where a work root, category or tenant would be.
    yield txt`\n${paint("yellow", "Not looked into (a link or a file where runs would be):")}\n`
    yield table([{ header: "WHAT" }, { header: "PATH" }, { header: "WHY" }], list.notListed.map((t) => [t.what, t.path, t.detail]), paint)
  }
  const stopped = stoppedLines(paint, list.stoppedBy)
  if (stopped.length > 0) yield txt`\n${joinShown(stopped, "\n")}\n`
  for (const e of list.errors) yield txt`could not read ${e.path}: ${e.message}\n`
}

export const ls = (ctx: CliContext, options: { readonly filter: string | undefined; readonly json: boolean; readonly limits?: InventoryOptions }) =>
  Effect.gen(function*() {
    let filter: { readonly category?: string; readonly tenant?: string } = {}
    if (options.filter !== undefined) {
      const parsed = parseTenantFilter(options.filter)
      if (!parsed.ok) return yield* usageError(ctx, parsed.message)
      filter = parsed.value
    }
    yield* withStack(ctx, (s) =>
      Effect.flatMap(s.Inventory, (inventory) => inventory.listRuns(filter, options.limits)).pipe(
        Effect.flatMap((list) =>
          list.notADirectory !== null
            ? notADirectory(ctx, list.agentDir, list.notADirectory)
            : options.json ? printJson(list) : outPieces(runListPieces(ctx, list, options.filter))
        ),
        Effect.catchAll((e) => reportError(ctx, e))
      ))
  })
