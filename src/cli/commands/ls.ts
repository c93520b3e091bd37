/**
 * `pi-storage work ls [CATEGORY[/TENANT]]`: every run with its id, kind, state, last use and size, and the
 * entries the library does not own.
 */
import * as Effect from "effect/Effect"
import type { InventoryOptions, RunList, RunState } from "../../services/Inventory.js"
import { type CliContext, notADirectory, out, printJson, reportError, usageError, withStack } from "../context.js"
import { formatAge, formatApparent, formatEntries, formatSize, joinShown, type Paint, type Shown, stoppedLines, table, txt } from "../format.js"
import { parseTenantFilter } from "../parse.js"

const stateCell = (paint: Paint, state: RunState): Shown | string =>
  state === "active" ? paint("green", state) : state === "idle" ? paint("yellow", state) : state

export const renderRunList = (ctx: CliContext, list: RunList): Shown => {
  const { paint } = ctx
  const parts: Array<Shown> = []
  if (list.runs.length === 0) {
    parts.push(txt`No work runs.\n`)
  } else {
    parts.push(table(
      [
        { header: "TENANT" },
        { header: "RUN" },
        { header: "KIND" },
        { header: "STATE" },
        { header: "HELD BY" },
        { header: "LAST USE" },
        { header: "ENTRIES", align: "right" },
        { header: "DISK", align: "right" },
        { header: "APPARENT", align: "right" }
      ],
      list.runs.map((r) => [
        `${r.category}/${r.tenant}`,
        r.runId,
        r.kind,
        stateCell(paint, r.state),
        r.holders.length === 0
          ? r.state === "active" ? "?" : "-"
          : r.holders.map((h) => `${h.host}:${h.pid}${h.since === null ? "" : ` since ${formatAge(h.since, list.scannedAt)}`}`).join(", "),
        formatAge(r.lastUsedAt, list.scannedAt),
        formatEntries(r.size),
        formatSize(r.size),
        formatApparent(r.size)
      ]),
      paint
    ))
  }
  if (list.unowned.length > 0) {
    parts.push(txt`\n${paint("yellow", "Not owned by the library (never pruned):")}\n`)
    parts.push(table(
      [{ header: "TENANT" }, { header: "ENTRY" }, { header: "WHY" }],
      list.unowned.map((u) => [`${u.category}/${u.tenant}`, u.name, u.why]),
      paint
    ))
  }
  const stopped = stoppedLines(paint, list.stoppedBy)
  if (stopped.length > 0) parts.push(txt`\n${joinShown(stopped, "\n")}\n`)
  for (const e of list.errors) parts.push(txt`could not read ${e.path}: ${e.message}\n`)
  return joinShown(parts)
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
            : options.json ? printJson(list) : out(renderRunList(ctx, list))
        ),
        Effect.catchAll((e) => reportError(ctx, e))
      ))
  })
