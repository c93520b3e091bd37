/**
 * Each credential the config history used to commit as it was (docs/config-history.md "Config history"): the JSON keys its
 * word list missed (`auth`, `pass`, `key`, `sessionKey`), a number under a credential key, a password inside a
 * URL, a flag's value in an argument array, and every format that was not JSON. None of them may reach the
 * bytes history stores.
 */
import { assert, describe, it } from "@effect/vitest"
import { historyContent } from "../../src/domain/ConfigHistory.js"

const enc = (s: string) => new TextEncoder().encode(s)
const dec = (b: Uint8Array) => new TextDecoder().decode(b)

/** What history would store for `name`; a skipped file stores nothing. */
const stored = (name: string, text: string): string => {
  const c = historyContent(name, enc(text))
  return c._tag === "Keep" ? dec(c.bytes) : ""
}

const MISSES: ReadonlyArray<readonly [string, string, string, string]> = [
  ["the key auth", "settings.json", JSON.stringify({ registry: { auth: "dXNlcjpTRUtSRVQtQVVUSA==" } }), "dXNlcjpTRUtSRVQtQVVUSA=="],
  ["the key pass", "settings.json", JSON.stringify({ smtp: { user: "me", pass: "SEKRET-PASS" } }), "SEKRET-PASS"],
  ["the key key", "settings.json", JSON.stringify({ provider: { key: "SEKRET-KEY" } }), "SEKRET-KEY"],
  ["the key sessionKey", "settings.json", JSON.stringify({ claude: { sessionKey: "SEKRET-SESSION" } }), "SEKRET-SESSION"],
  ["a number under a credential key", "settings.json", JSON.stringify({ bank: { password: 90210417 } }), "90210417"],
  ["a password inside a URL", "settings.json", JSON.stringify({ database: "postgres://app:SEKRET-URL@db.example/app" }), "SEKRET-URL"],
  ["a flag's value in an argument array", "settings.json", JSON.stringify({ mcp: { args: ["-y", "server", "--token", "SEKRET-ARG"] } }), "SEKRET-ARG"],
  ["a --flag=value argument", "settings.json", JSON.stringify({ mcp: { args: ["--api-key=SEKRET-ARGEQ"] } }), "SEKRET-ARGEQ"],
  ["YAML", "server.yaml", "server:\n  apiKey: SEKRET-YAML\n", "SEKRET-YAML"],
  ["TOML", "server.toml", "[server]\ntoken = \"SEKRET-TOML\"\n", "SEKRET-TOML"],
  ["INI", "server.ini", "[db]\npassword = SEKRET-INI\n", "SEKRET-INI"],
  [".npmrc", ".npmrc", "//registry.npmjs.org/:_authToken=SEKRET-NPMRC\n", "SEKRET-NPMRC"],
  ["an env file", "prod.env", "OPENAI_API_KEY=SEKRET-ENV\n", "SEKRET-ENV"],
  ["JSONC", "settings.jsonc", "{\n  // the key\n  \"apiKey\": \"SEKRET-JSONC\",\n}\n", "SEKRET-JSONC"],
  ["JSON5", "settings.json5", "{ apiKey: 'SEKRET-JSON5', }\n", "SEKRET-JSON5"],
  ["a file of no known format", "notes.txt", "apiKey = SEKRET-TXT\n", "SEKRET-TXT"]
]

describe("credentials history used to commit as they were", () => {
  for (const [what, name, text, secret] of MISSES) {
    it(`${what} (${name}) never reaches the stored bytes`, () => {
      assert.notInclude(stored(name, text), secret)
    })
  }
})
