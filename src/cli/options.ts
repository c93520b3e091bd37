/**
 * Flags several commands share, defined once so every help page says the same thing (`--json`,
 * `--dry-run`), a flag whose value goes through one of our parsers, and the `Option` → `undefined` step
 * every handler takes.
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type Parsed, parseCount } from "./parse.js"

export const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON document instead of text (default: text)."))

export const dryRun = Options.boolean("dry-run").pipe(Options.withDescription("Show what would happen; change nothing (default: off)."))

export const value = <A>(o: Option.Option<A>): A | undefined => Option.getOrUndefined(o)

/**
 * The scan bounds (docs/work-runs.md "Retention", "CLI quick tour"): what a report that stopped early names as the flag
 * that raises it (domain/StoppedBy.ts). `status` and `work ls` take all four; `work prune` the first three.
 */
/** A count flag `--NAME N` (a positive integer), absent when not given. */
const countOption = (name: string, description: string) =>
  Options.text(name).pipe(
    Options.withPseudoName("N"),
    Options.mapEffect(countValue(name)),
    Options.withDescription(description),
    Options.optional
  )

export const scanBounds = {
  maxScannedRuns: countOption("max-scanned-runs", "Examine at most N entries of each tenant. Default: 10000. Example: --max-scanned-runs 50000"),
  maxEntries: countOption(
    "max-entries",
    "Let the size walks of each tenant visit at most N entries. Default: 100000. Example: --max-entries 1000000"
  ),
  maxDepth: countOption("max-depth", "Size walks go at most N directories deep. Default: 64. Example: --max-depth 128"),
  maxScanEntries: countOption(
    "max-scan-entries",
    "Read at most N directory entries and leases in all. Default: 100000. Example: --max-scan-entries 500000"
  )
}

/** The scan bounds given, as the inventory's options (absent ones left out: the defaults). */
export const inventoryLimits = (o: {
  readonly maxScannedRuns: Option.Option<number>
  readonly maxEntries: Option.Option<number>
  readonly maxDepth: Option.Option<number>
  readonly maxScanEntries: Option.Option<number>
}) => ({
  ...Option.match(o.maxScannedRuns, { onNone: () => ({}), onSome: (maxRunsPerTenant) => ({ maxRunsPerTenant }) }),
  ...Option.match(o.maxEntries, { onNone: () => ({}), onSome: (maxEntries) => ({ maxEntries }) }),
  ...Option.match(o.maxDepth, { onNone: () => ({}), onSome: (maxDepth) => ({ maxDepth }) }),
  ...Option.match(o.maxScanEntries, { onNone: () => ({}), onSome: (maxScanEntries) => ({ maxScanEntries }) })
})

function countValue(name: string) {
  return (text: string) => {
    const parsed = parseCount(text)
    return parsed.ok ? Effect.succeed(parsed.value) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: ${parsed.message}`)))
  }
}

/** A flag whose value goes through one of our parsers; a bad value names the flag and the value. */
export const parsedOption = <A>(name: string, pseudoName: string, parse: (text: string) => Parsed<A>, description: string) =>
  Options.text(name).pipe(
    Options.withPseudoName(pseudoName),
    Options.mapEffect((text) => {
      const parsed = parse(text)
      return parsed.ok ? Effect.succeed(parsed.value) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: ${parsed.message}`)))
    }),
    Options.withDescription(description),
    Options.optional
  )
