/**
 * The migration plan the documentation shows (docs/migrations.md "Migrations"): the YAML block after the line
 * `<!-- migration-plan-example -->`. The CLI test runs it on real disk and the crash test crashes it at every
 * step, so the documented plan is the one known to work.
 */
import * as Fs from "node:fs"
import { fileURLToPath } from "node:url"

const MIGRATIONS_PAGE = fileURLToPath(new URL("../../docs/migrations.md", import.meta.url))

export const readmePlanText = (): string => {
  const lines = Fs.readFileSync(MIGRATIONS_PAGE, "utf8").split("\n")
  const marker = lines.findIndex((l) => l.trim() === "<!-- migration-plan-example -->")
  if (marker === -1 || lines[marker + 1] !== "```yaml") throw new Error("docs/migrations.md: no ```yaml block after <!-- migration-plan-example -->")
  const end = lines.findIndex((l, i) => i > marker + 1 && l.startsWith("```"))
  if (end === -1) throw new Error("docs/migrations.md: the migration plan example is not closed")
  return lines.slice(marker + 2, end).join("\n") + "\n"
}

/** The extension and ledger the documented plan names (the tests seed them). */
export const README_PLAN = { id: "aiti-usage-state-tier", extId: "aiti-usage" } as const
