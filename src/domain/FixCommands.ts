/**
 * How a finding's fix writes a command (docs/migrations.md "Doctor"): in backticks, copied and run as it stands from any
 * directory, so every path in it is absolute and a `pi-storage` command names the agent dir it is about
 * (`--agent-dir`). Each word is quoted the way a POSIX shell reads it back. Pure.
 */

/**
 * A word as `sh` reads it back: as it is when it holds only safe characters, else in single quotes, a quote in
 * it as `'"'"'`. No backslash: a person's screen shows a backslash doubled (`displayText`), and a command that
 * changed on the way to the screen must never be one a shell runs (a `'\\''` shown as `'\\\\''` ends the quoting,
 * and what followed in the name ran).
 */
export const shellWord = (word: string): string =>
  /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`

/** `--agent-dir /home/u/.pi/agent`: the flag a suggested `pi-storage` command names its agent dir with. */
export const agentDirFlag = (agentDir: string): string => `--agent-dir ${shellWord(agentDir)}`

/** `--web-data-root /home/u/.pi/web-dev/data`: for a command about one web data root's files. */
export const webDataRootFlag = (webDataRoot: string): string => `--web-data-root ${shellWord(webDataRoot)}`
