/** When the CLI paints (context.ts; configFast.ts reads it without loading effect). Pure. */

/**
 * Colour only on a TTY, and never with `--no-color`, a non-empty `NO_COLOR` (no-color.org) or `TERM=dumb` (a
 * terminal that shows escape codes as text: Emacs' shell, some CI logs).
 */
export const useColor = (input: {
  readonly noColorFlag: boolean
  readonly noColorEnv: string | undefined
  readonly term?: string | undefined
  readonly isTTY: boolean | undefined
}): boolean => !input.noColorFlag && (input.noColorEnv ?? "") === "" && input.term !== "dumb" && input.isTTY === true
