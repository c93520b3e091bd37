/**
 * A unified diff (git's, as the config history gives it) as side-by-side rows: context on both sides, each run
 * of removed lines paired with the run of added lines that follows it. Pure.
 *
 * A file's name is never read from the patch: the k-th `diff --git` section is the k-th of the diff's `files`
 * (the same order), so a name git quotes or that holds a line separator (U+2028) cannot move one file's lines
 * under another's name. Header lines are those between `diff --git` and the first `@@`; in a hunk, a line that
 * starts `---` or `+++` is content.
 */
export interface DiffRow {
  readonly left: { readonly line: number; readonly text: string } | null
  readonly right: { readonly line: number; readonly text: string } | null
  readonly kind: "context" | "changed" | "removed" | "added"
}

export interface FileDiff {
  readonly path: string
  readonly rows: ReadonlyArray<DiffRow | { readonly kind: "hunk"; readonly header: string }>
}

export const sideBySide = (patch: string, names: ReadonlyArray<string>): ReadonlyArray<FileDiff> => {
  const files: Array<{ path: string; rows: Array<FileDiff["rows"][number]> }> = []
  let file: (typeof files)[number] | undefined
  let inHeader = false
  let left = 0
  let right = 0
  let removed: Array<{ line: number; text: string }> = []
  let added: Array<{ line: number; text: string }> = []
  const flush = () => {
    if (file === undefined) return
    const n = Math.max(removed.length, added.length)
    for (let i = 0; i < n; i++) {
      const l = removed[i] ?? null
      const r = added[i] ?? null
      file.rows.push({ left: l, right: r, kind: l !== null && r !== null ? "changed" : l !== null ? "removed" : "added" })
    }
    removed = []
    added = []
  }
  for (const line of patch.split("\n")) {
    if (line.startsWith("diff --git ")) {
      flush()
      file = { path: names[files.length] ?? "(a file the diff does not name)", rows: [] }
      files.push(file)
      inHeader = true
      continue
    }
    if (file === undefined) continue
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line)
    if (hunk !== null) {
      flush()
      inHeader = false
      left = Number(hunk[1])
      right = Number(hunk[2])
      file.rows.push({ kind: "hunk", header: line })
      continue
    }
    if (inHeader || line.startsWith("\\")) continue
    if (line.startsWith("-")) removed.push({ line: left++, text: line.slice(1) })
    else if (line.startsWith("+")) added.push({ line: right++, text: line.slice(1) })
    else if (line.startsWith(" ")) {
      flush()
      file.rows.push({ left: { line: left++, text: line.slice(1) }, right: { line: right++, text: line.slice(1) }, kind: "context" })
    }
  }
  flush()
  return files
}

/** The library's redaction marker: a credential history never holds (README "Config history"). */
export const REDACTED = "[redacted by pi-storage]"
