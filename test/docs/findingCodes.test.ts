/**
 * The doctor's finding table in docs/migrations.md is FINDING_CODES (src/domain/Findings.ts), row for row: a
 * code added, renamed or re-worded in the code and not on the page (or the reverse) fails here.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { FINDING_CODES } from "../../src/domain/Findings.js"

const PAGE = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "docs", "migrations.md")

/** One table row as the page writes it. */
const findingRow = (code: string, severity: string, meaning: string): string => `| \`${code}\` | ${severity} | ${meaning.replaceAll("|", "\\|")} |`

/** The rows of the table under the `| Code | Severity | Meaning |` header. */
const tableRows = (text: string): Array<string> => {
  const lines = text.split("\n")
  const header = lines.indexOf("| Code | Severity | Meaning |")
  assert.isAbove(header, -1, "docs/migrations.md has the findings table")
  const rows: Array<string> = []
  for (let i = header + 2; i < lines.length && lines[i]!.startsWith("|"); i++) rows.push(lines[i]!)
  return rows
}

describe("the doctor's findings table", () => {
  it("docs/migrations.md lists exactly FINDING_CODES, each with its severity and meaning", () => {
    const expected = Object.entries(FINDING_CODES).map(([code, f]) => findingRow(code, f.severity, f.meaning))
    assert.deepStrictEqual(tableRows(fs.readFileSync(PAGE, "utf8")), expected)
  })
})
