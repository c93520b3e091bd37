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
import { boundFlag, SCAN_BOUNDS, type ScanBound, type ScanLimits } from "./scanBoundFlags.js"

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
  maxScannedRuns: countOption(
    boundFlag("maxScannedRuns"),
    "Examine at most N entries of each tenant. Default: 10000. Example: --max-scanned-runs 50000"
  ),
  maxEntries: countOption(
    boundFlag("maxEntries"),
    "Let the size walks of each tenant visit at most N entries. Default: 100000. Example: --max-entries 1000000"
  ),
  maxDepth: countOption(boundFlag("maxDepth"), "Size walks go at most N directories deep. Default: 64. Example: --max-depth 128"),
  maxScanEntries: countOption(
    boundFlag("maxScanEntries"),
    "Read at most N directory entries and leases in all. Default: 100000. Example: --max-scan-entries 500000"
  )
}

/** The scan bounds given, as the inventory's options (absent ones left out: the defaults). */
export const inventoryLimits = (o: { readonly [K in ScanBound["option"]]: Option.Option<number> }): ScanLimits => {
  const limits: { -readonly [K in keyof ScanLimits]: number } = {}
  for (const bound of SCAN_BOUNDS) {
    const given = o[bound.option]
    if (Option.isSome(given)) limits[bound.limit] = given.value
  }
  return limits
}

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
