/** When the CLI paints or draws (context.ts; configFast.ts reads it without loading effect). Pure. */

/**
 * A terminal the CLI may draw on (colour, a line redrawn in place with `\r\x1b[K`): a TTY whose `TERM` is not
 * `dumb` (a terminal that shows escape codes as text: Emacs' shell, some CI logs).
 */
export const drawableTerminal = (input: { readonly term?: string | undefined; readonly isTTY: boolean | undefined }): boolean =>
  input.term !== "dumb" && input.isTTY === true

/** Colour only on a terminal it may draw on, and never with `--no-color` or a non-empty `NO_COLOR` (no-color.org). */
export const useColor = (input: {
  readonly noColorFlag: boolean
  readonly noColorEnv: string | undefined
  readonly term?: string | undefined
  readonly isTTY: boolean | undefined
}): boolean => !input.noColorFlag && (input.noColorEnv ?? "") === "" && drawableTerminal(input)

/**
 * A progress line on stderr (a long prune, a backup): only on a terminal it may draw on, and never with
 * `--json`, whose stderr holds nothing but JSON (an error's one object). Not colour: `--no-color` keeps it.
 */
export const showProgress = (input: { readonly json: boolean | undefined; readonly term?: string | undefined; readonly isTTY: boolean | undefined }): boolean =>
  input.json !== true && drawableTerminal(input)
