import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import {
  AGENT_CONFIG_FILES,
  DEFAULT_DENYLIST,
  deniedBy,
  displayOfRepoPath,
  displayPatch,
  historyContent,
  isCredentialKey,
  isLiteralCredential,
  REDACTED,
  redactJson,
  restoreRedacted,
  revisionViolation,
  rollbackContent
} from "../../src/domain/ConfigHistory.js"

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v))
const dec = (b: Uint8Array) => new TextDecoder().decode(b)

/** JSON values whose keys are drawn from credential-ish and ordinary names, so both paths are exercised. */
const keys = fc.constantFrom("apiKey", "api_key", "token", "secret", "password", "Authorization", "x-api-key", "accessToken",
  "maxTokens", "tokenizer", "name", "baseUrl", "headers", "model", "id")
const values = fc.constantFrom("sk-live-1", "hunter2", "OPENAI_API_KEY", "!pass show x", "${X}", "$Y", "AKIAEXAMPLE", "plain", "")
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, values, fc.integer(), fc.boolean(), fc.constant(null), tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 3 }),
  object: fc.dictionary(keys, tie("value"), { maxKeys: 4 })
})).value

/** Every string sitting under a credential key (at any depth) that is a literal. */
const literalSecrets = (v: unknown, credential = false): Array<string> => {
  if (credential && isLiteralCredential(v)) return [v]
  if (Array.isArray(v)) return v.flatMap((x) => literalSecrets(x, credential))
  if (typeof v === "object" && v !== null) return Object.entries(v).flatMap(([k, x]) => literalSecrets(x, credential || isCredentialKey(k)))
  return []
}

describe("config history rules (pure)", () => {
  it("versions the config class of the canonical table", () => {
    assert.deepStrictEqual([...AGENT_CONFIG_FILES].sort(), ["auth.json", "keybindings.json", "models.json", "settings.json"])
  })

  it("the default denylist", () => {
    for (const bad of ["auth.json", "AUTH.JSON", "server.pem", "ssh.key", "id_rsa", "id_ed25519.pub", ".env", ".env.local",
      "my-secret.txt", "github_TOKEN", "credentials.json", "ext/config/Credential-store"]) {
      assert.isNotNull(deniedBy(bad, DEFAULT_DENYLIST), bad)
    }
    for (const ok of ["settings.json", "models.json", "keybindings.json", "keys.txt", "environment.json", "identity.json"]) {
      assert.isNull(deniedBy(ok, DEFAULT_DENYLIST), ok)
    }
    assert.strictEqual(deniedBy("notes/config/a.yaml", ["notes/config/*.yaml"]), "notes/config/*.yaml", "a pattern with / matches the path")
    assert.isNull(deniedBy("notes/config/a.yaml", ["other/*"]))
  })

  it("credential keys by words; literals only", () => {
    for (const k of ["apiKey", "api_key", "API-KEY", "x-api-key", "token", "accessToken", "secret", "client_secret", "password",
      "Authorization", "credentials", "cookie"]) assert.isTrue(isCredentialKey(k), k)
    for (const k of ["maxTokens", "tokenizer", "name", "model", "keybindings", "author", "path"]) assert.isFalse(isCredentialKey(k), k)
    for (const v of ["sk-1", "hunter2", "AKIAIOSFODNN7EXAMPLE", "Bearer x"]) assert.isTrue(isLiteralCredential(v), v)
    for (const v of ["OPENAI_API_KEY", "$X", "${MY_TOKEN}", "!op read x", "", REDACTED, 42, null, { a: 1 }]) {
      assert.isFalse(isLiteralCredential(v), JSON.stringify(v))
    }
  })

  it.prop("redaction leaves no literal credential and keeps everything else", [json], ([value]) => {
    const { value: red } = redactJson(value)
    assert.deepStrictEqual(literalSecrets(red), [])
    // Redacting twice changes nothing more.
    assert.deepStrictEqual(redactJson(red).value, red)
    return true
  }, { fastCheck: { numRuns: 300 } })

  it.prop("restoring the redacted copy against itself gives back the original", [json], ([value]) => {
    assert.deepStrictEqual(restoreRedacted(redactJson(value).value, value), { value, unresolved: [] })
    return true
  }, { fastCheck: { numRuns: 300 } })

  it.prop("a rollback keeps the live value of every redacted field and never writes a placeholder", [json, json], ([old, live]) => {
    const stored = historyContent("models.json", enc(old))
    assert.strictEqual(stored._tag, "Keep")
    if (stored._tag !== "Keep") return false
    const written = rollbackContent(stored.bytes, enc(live))
    assert.notInclude(dec(written.bytes), JSON.stringify(REDACTED))
    const back = JSON.parse(dec(written.bytes))
    // Where the old value held a secret and the live file has a string at that place, the live one is written.
    for (const pointer of redactJson(old).redacted) {
      // A JSON pointer walks objects and arrays only (a string's characters are not values of the document).
      const at = (v: unknown) =>
        pointer.split("/").slice(1).reduce<unknown>(
          (x, k) => (typeof x === "object" && x !== null ? (x as Record<string, unknown>)[k.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined),
          v
        )
      const liveValue = at(live)
      if (typeof liveValue === "string" && liveValue !== REDACTED) assert.strictEqual(at(back), liveValue, pointer)
      else assert.include(written.unresolved, pointer)
    }
    return true
  }, { fastCheck: { numRuns: 300 } })

  it("history content: JSON without secrets stays byte for byte; unparsable JSON is skipped; other files as they are", () => {
    const pretty = new TextEncoder().encode('{ "theme":"dark" }')
    assert.deepStrictEqual(historyContent("settings.json", pretty), { _tag: "Keep", bytes: pretty, redacted: [] })
    assert.strictEqual(historyContent("settings.json", new TextEncoder().encode("{"))._tag, "Skip")
    // A rollback to a redacted copy of the same JSON keeps the live file's bytes (no reformatting).
    const live = new TextEncoder().encode('{"apiKey":"sk-1",  "model":"m"}')
    const stored = historyContent("models.json", live)
    assert.strictEqual(stored._tag === "Keep" && rollbackContent(stored.bytes, live).bytes, live)
    const txt = new TextEncoder().encode('password: "x"')
    assert.deepStrictEqual(historyContent("a.txt", txt), { _tag: "Keep", bytes: txt, redacted: [] })
  })

  it("git output: patch headers in display paths; revisions a caller may name", () => {
    assert.strictEqual(displayOfRepoPath("agent/profiles/directories/p/settings.json"), "profiles/directories/p/settings.json")
    assert.strictEqual(
      displayPatch("diff --git a/agent/s.json b/agent/s.json\n--- a/agent/s.json\n+++ b/agent/s.json\n-agent/x"),
      "diff --git a/s.json b/s.json\n--- a/s.json\n+++ b/s.json\n-agent/x"
    )
    for (const bad of ["", "-p", "--output=x", "a b", "a;b"]) assert.isNotNull(revisionViolation(bad), bad)
    for (const ok of ["HEAD", "HEAD~2", "abc123", "main", "HEAD@{1}"]) assert.isNull(revisionViolation(ok), ok)
  })
})
