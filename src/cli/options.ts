/**
 * Flags several commands share, defined once so every help page says the same thing (`--json`,
 * `--dry-run`), and the `Option` → `undefined` step every handler takes.
 */
import * as Options from "@effect/cli/Options"
import * as Option from "effect/Option"

export const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON document instead of text (default: text)."))

export const dryRun = Options.boolean("dry-run").pipe(Options.withDescription("Show what would happen; change nothing (default: off)."))

export const value = <A>(o: Option.Option<A>): A | undefined => Option.getOrUndefined(o)
