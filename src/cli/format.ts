/**
 * Human output: sizes in B/KiB/MiB/GiB, ages like `3d 4h`, aligned tables, optional colour, and the one type
 * every line of it is: `Shown`. Pure.
 */
import { countOf as countWords, groupedDigits } from "../domain/Count.js"
import { displayText } from "../domain/Display.js"
import type { Severity } from "../domain/Findings.js"
import type { StoppedBy } from "../domain/StoppedBy.js"

// ---------------------------------------------------------------------------------------------- shown text

/**
 * Text the CLI may print (docs/cli.md "CLI quick tour"): its own words, layout and colours, with every other
 * string (a name, a profile entry, a manifest field, an error message naming a path) passed through
 * `displayText` on the way in, so nothing that steers a terminal (ESC, OSC 52, a newline forging a report
 * line) reaches it raw. Only the functions below make one, and `out`/`err` print nothing else; `--json`
 * output is the exact document instead.
 */
class ShownText {
  // Nominal: only this module's functions make one (a look-alike object does not type-check).
  private readonly shownBrand = undefined
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}
export type Shown = ShownText

/** A piece of human output: a string is escaped, a number written out, a `Shown` kept. */
export type Showable = Shown | string | number

/** `value` made printable: a string through `displayText`. */
export const shown = (value: Showable): Shown =>
  value instanceof ShownText ? value : new ShownText(typeof value === "number" ? String(value) : displayText(value))

/**
 * A template of the CLI's own words: the literal parts are printed as written (newlines included), every
 * interpolated value goes through `shown`. `` txt`${name}: removed ${n} runs\n` ``
 */
export const txt = (literals: TemplateStringsArray, ...values: ReadonlyArray<Showable>): Shown => {
  let text = literals[0]!
  values.forEach((value, i) => (text += shown(value).text + literals[i + 1]!))
  return new ShownText(text)
}

/** Pieces one after the other, `separator` (the CLI's own) between them. */
export const joinShown = (parts: ReadonlyArray<Shown>, separator = ""): Shown =>
  new ShownText(parts.map((p) => p.text).join(separator))

/** `block` without trailing whitespace (a table's last newline, to join it as one line among others). */
export const trimEnd = (block: Shown): Shown => new ShownText(block.text.trimEnd())

/** Every non-empty line of `block` after `prefix` (the CLI's own indentation). */
export const indent = (block: Shown, prefix: string): Shown => new ShownText(block.text.replace(/^(?=.)/gm, prefix))

/**
 * Text the CLI composed entirely from its own words (help pages generated from its command descriptions,
 * the version line): printed as it is. Never for anything read from disk, argv or a library message.
 */
export const ownText = (text: string): Shown => new ShownText(text)

const UNITS = ["KiB", "MiB", "GiB", "TiB"] as const

/** `512 B`, `1.5 KiB`, `12.0 MiB`, `2.0 GiB`. */
export const formatBytes = (bytes: number): string => {
  if (bytes < 1024) return `${bytes} B`
  let value = bytes / 1024
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  // One decimal, rounded down, so a size is never shown larger than it is.
  return `${(Math.floor(value * 10) / 10).toFixed(1)} ${UNITS[unit]}`
}

/** `7`, `20,000`: a count with thousands separators (domain/Count.ts). */
export const formatCount = groupedDigits

/** A bounded measurement; `measured: false` (no walk counted it) is shown as no number at all. */
interface Measured {
  readonly complete: boolean
  readonly measured?: boolean
}

/** Entries (names) of a bounded measurement (`≥ ` marks a lower bound); `-` when not measured. */
export const formatEntries = (size: Measured & { readonly entries: number }): string =>
  size.measured === false ? "-" : (size.complete ? "" : "≥ ") + formatCount(size.entries)

/** A bounded measurement's disk usage: `≥ ` marks a lower bound (the walk was cut short); `not measured` says so. */
export const formatSize = (size: Measured & { readonly bytes: number }): string =>
  size.measured === false ? "not measured" : (size.complete ? "" : "≥ ") + formatBytes(size.bytes)

/** Each bound that stopped a report early, in words: how much it left and the flag that raises it. */
export const stoppedLines = (paint: Paint, stoppedBy: ReadonlyArray<StoppedBy>): Array<Shown> =>
  stoppedBy.map((s) => paint("yellow", `Stopped early: ${s.message}`))

/** A bounded measurement's apparent size (as `du -sb`), beside its disk usage; `-` when not measured. */
export const formatApparent = (size: Measured & { readonly apparentBytes: number }): string =>
  size.measured === false ? "-" : (size.complete ? "" : "≥ ") + formatBytes(size.apparentBytes)

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/** The two largest units: `45s`, `12m`, `3h 5m`, `3d 4h`, `40d`. Negative spans show as `0s`. */
export const formatDuration = (ms: number): string => {
  const span = Math.max(0, Math.floor(ms))
  const two = (big: number, bigUnit: string, small: number, smallUnit: string) =>
    small === 0 ? `${big}${bigUnit}` : `${big}${bigUnit} ${small}${smallUnit}`
  if (span < MINUTE) return `${Math.floor(span / SECOND)}s`
  if (span < HOUR) return `${Math.floor(span / MINUTE)}m`
  if (span < DAY) return two(Math.floor(span / HOUR), "h", Math.floor((span % HOUR) / MINUTE), "m")
  return two(Math.floor(span / DAY), "d", Math.floor((span % DAY) / HOUR), "h")
}

/** How long ago `at` was, seen from `now`. */
export const formatAge = (at: number, now: number): string => `${formatDuration(now - at)} ago`

/** `1 warning`, `2 warnings`, `3 info` (a mass noun), `2 errors`; `1 entry`, `2 entries` with the plural given. */
export const countOf = (n: number, one: string, many?: string): string => (one === "info" ? `${n} info` : countWords(n, one, many))

/** Severities worst first: the order of the doctor's table and of every summary. */
export const SEVERITY_ORDER: ReadonlyArray<Severity> = ["error", "warning", "info"]

/** 0 for the worst severity; sort by it. */
export const severityRank = (severity: Severity): number => SEVERITY_ORDER.indexOf(severity)

/** "1 error, 3 warnings", worst first, leaving out severities with none. */
export const severitySummary = (counts: Record<Severity, number>): string =>
  SEVERITY_ORDER.filter((s) => counts[s] > 0).map((s) => countOf(counts[s], s)).join(", ")

// ---------------------------------------------------------------------------------------------- colour

export type Style = "bold" | "dim" | "red" | "yellow" | "green" | "cyan"

const CODES: Readonly<Record<Style, readonly [number, number]>> = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  yellow: [33, 39],
  green: [32, 39],
  cyan: [36, 39]
}

/** Colour `text` (escaped when it is a string): the only escape sequences human output carries. */
export interface Paint {
  (style: Style, text: Showable): Shown
}

export const painter = (enabled: boolean): Paint => (style, text) => {
  const inner = shown(text)
  return enabled && inner.text !== "" ? new ShownText(`\u001b[${CODES[style][0]}m${inner.text}\u001b[${CODES[style][1]}m`) : inner
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g

export const stripAnsi = (text: string): string => text.replace(ANSI, "")

/** Display width: code points without escape sequences (every character we print is one column wide). */
const width = (text: string): number =>
  // Most cells hold neither an escape nor a surrogate: their width is their length, with no array made for it
  // (a `work ls` of 40,000 runs measures 720,000 cells).
  NEEDS_SPLIT.test(text) ? [...stripAnsi(text)].length : text.length

/** An escape (`stripAnsi` removes it) or a surrogate (two code units, one code point). */
const NEEDS_SPLIT = /[\u001b\ud800-\udfff]/

// ---------------------------------------------------------------------------------------------- tables

export interface Column {
  readonly header: string
  /** Numbers and sizes read best right-aligned. */
  readonly align?: "left" | "right"
}

/**
 * Columns separated by two spaces, padded to the widest cell; the last column is never padded (no trailing
 * blanks). A string cell is escaped (`shown`), so one row is one line whatever it holds; cells may carry
 * colour: widths ignore our escape sequences.
 */
export const table = (columns: ReadonlyArray<Column>, rows: ReadonlyArray<ReadonlyArray<Showable>>, paint?: Paint): Shown =>
  joinShown([...tablePieces(columns, rows.length, (i) => rows[i]!, paint)])

/** How many lines one piece of `tablePieces` holds. */
const LINES_PER_PIECE = 512

/**
 * `table` of `count` rows, in pieces whose concatenation is exactly it, for a table too long to hold whole
 * (`work ls` of 40,000 runs): a first pass over the rows finds the column widths, and each row is made again
 * (`rowAt`, pure) as its piece is written, so no row's cells outlive it.
 */
export function* tablePieces(
  columns: ReadonlyArray<Column>,
  count: number,
  rowAt: (i: number) => ReadonlyArray<Showable>,
  paint?: Paint
): Generator<Shown> {
  const cellsAt = (i: number): Array<string> => {
    const row = rowAt(i)
    return columns.map((_, c) => shown(row[c] ?? "").text)
  }
  const widths = columns.map((c) => width(c.header))
  for (let i = 0; i < count; i++) {
    const cells = cellsAt(i)
    for (let c = 0; c < widths.length; c++) widths[c] = Math.max(widths[c]!, width(cells[c]!))
  }
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((cell, i) => {
      const pad = " ".repeat(widths[i]! - width(cell))
      if (columns[i]?.align === "right") return pad + cell
      return i === cells.length - 1 ? cell : cell + pad
    }).join("  ")
  const header = line(columns.map((c) => c.header))
  let piece = (paint ? paint("bold", header).text : header).trimEnd() + "\n"
  for (let i = 0; i < count; i++) {
    piece += line(cellsAt(i)).trimEnd() + "\n"
    if ((i + 1) % LINES_PER_PIECE === 0) {
      yield new ShownText(piece)
      piece = ""
    }
  }
  if (piece !== "") yield new ShownText(piece)
}
