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
import type { Parsed } from "./parse.js"

export const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON document instead of text (default: text)."))

export const dryRun = Options.boolean("dry-run").pipe(Options.withDescription("Show what would happen; change nothing (default: off)."))

export const value = <A>(o: Option.Option<A>): A | undefined => Option.getOrUndefined(o)

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
