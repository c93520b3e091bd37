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
  revisionViolation,
  rollbackContent
} from "../../src/domain/ConfigHistory.js"

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v))
const dec = (b: Uint8Array) => new TextDecoder().decode(b)

/** JSON values whose keys are drawn from credential-ish and ordinary names, so both paths are exercised. */
const keys = fc.constantFrom("apiKey", "api_key", "token", "secret", "password", "Authorization", "x-api-key", "accessToken",
  "auth", "pass", "key", "sessionKey", "maxTokens", "tokenizer", "tokenLimit", "name", "baseUrl", "headers", "model", "id")
const values = fc.constantFrom("sk-live-1", "hunter2", "OPENAI_API_KEY", "!pass show x", "${X}", "$Y", "AKIAEXAMPLE", "plain", "")
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, values, fc.integer(), fc.boolean(), fc.constant(null), tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 3 }),
  object: fc.dictionary(keys, tie("value"), { maxKeys: 4 })
})).value

/** The scalars sitting under a credential key (at any depth) that are literals: strings, and every number. */
const literalSecrets = (v: unknown, credential = false): Array<unknown> => {
  if (credential && (isLiteralCredential(v) || typeof v === "number")) return [v]
  if (Array.isArray(v)) return v.flatMap((x) => literalSecrets(x, credential))
  if (typeof v === "object" && v !== null) return Object.entries(v).flatMap(([k, x]) => literalSecrets(x, credential || isCredentialKey(k)))
  return []
}

/** A JSON pointer's value (objects and arrays only: a string's characters are not values of the document). */
const at = (v: unknown, pointer: string) =>
  pointer.split("/").slice(1).reduce<unknown>(
    (x, k) => (typeof x === "object" && x !== null ? (x as Record<string, unknown>)[k.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined),
    v
  )

describe("config history rules (pure)", () => {
  it("versions the config class of the canonical table", () => {
    assert.deepStrictEqual([...AGENT_CONFIG_FILES].sort(), ["auth.json", "keybindings.json", "models.json", "settings.json"])
  })

  it("the default denylist", () => {
    for (const bad of ["auth.json", "AUTH.JSON", "server.pem", "ssh.key", "id_rsa", "id_ed25519.pub", ".env", ".env.local",
      "my-secret.txt", "github_TOKEN", "credentials.json", "ext/config/Credential-store", ".netrc", "_netrc", ".pgpass"]) {
      assert.isNotNull(deniedBy(bad, DEFAULT_DENYLIST), bad)
    }
    for (const ok of ["settings.json", "models.json", "keybindings.json", "keys.txt", "environment.json", "identity.json"]) {
      assert.isNull(deniedBy(ok, DEFAULT_DENYLIST), ok)
    }
    assert.strictEqual(deniedBy("notes/config/a.yaml", ["notes/config/*.yaml"]), "notes/config/*.yaml", "a pattern with / matches the path")
    assert.isNull(deniedBy("notes/config/a.yaml", ["other/*"]))
  })

  it("credential keys by words; literals only", () => {
    for (const k of ["apiKey", "api_key", "API-KEY", "APIKey", "x-api-key", "token", "accessToken", "secret", "client_secret", "password",
      "Authorization", "credentials", "cookie", "auth", "_auth", "basicAuth", "pass", "smtp_pass", "key", "sessionKey", "secretKey",
      "_authToken", "//registry.npmjs.org/:_authToken", "OPENAI_API_KEY", "apikey", "authtoken", "token_github", "apiKey2",
      "secret_id", "githubPat", "secretaccesskey"]) assert.isTrue(isCredentialKey(k), k)
    for (const k of ["maxTokens", "tokenizer", "name", "model", "keybindings", "keyBindings", "author", "path", "tokenLimit",
      "maxTokenCount", "passwordFile", "secretName", "tokenUrl", "authType", "publicKey", "sortKey", "accessKeyId", "bypass",
      "passes", "oauth", "cookieName", "password-stdin", "monkey", "hotkey"]) assert.isFalse(isCredentialKey(k), k)
    for (const v of ["sk-1", "hunter2", "AKIAIOSFODNN7EXAMPLE", "Bearer x"]) assert.isTrue(isLiteralCredential(v), v)
    for (const v of ["OPENAI_API_KEY", "$X", "${MY_TOKEN}", "!op read x", "", REDACTED, 42, null, { a: 1 }]) {
      assert.isFalse(isLiteralCredential(v), JSON.stringify(v))
    }
  })

  it.prop("redaction leaves no literal credential and keeps everything else", [json], ([value]) => {
    const stored = historyContent("models.json", enc(value))
    assert.strictEqual(stored._tag, "Keep")
    if (stored._tag !== "Keep") return false
    const red = JSON.parse(dec(stored.bytes))
    assert.deepStrictEqual(literalSecrets(red), [])
    // Where nothing was redacted the bytes are the same; redacting twice changes nothing more.
    if (stored.redacted.length === 0) assert.strictEqual(dec(stored.bytes), JSON.stringify(value))
    const again = historyContent("models.json", stored.bytes)
    assert.deepStrictEqual(again._tag === "Keep" && dec(again.bytes), dec(stored.bytes))
    return true
  }, { fastCheck: { numRuns: 300 } })

  it.prop("rolling the redacted copy back against the original gives back the original bytes", [json], ([value]) => {
    const stored = historyContent("models.json", enc(value))
    assert.strictEqual(stored._tag, "Keep")
    if (stored._tag !== "Keep") return false
    const back = rollbackContent("models.json", stored.bytes, enc(value))
    assert.deepStrictEqual(back._tag === "Write" && [dec(back.bytes), back.unresolved], [JSON.stringify(value), []])
    return true
  }, { fastCheck: { numRuns: 300 } })

  it.prop("a rollback keeps the live value of every redacted field and never writes a placeholder", [json, json], ([old, live]) => {
    const stored = historyContent("models.json", enc(old))
    assert.strictEqual(stored._tag, "Keep")
    if (stored._tag !== "Keep") return false
    const written = rollbackContent("models.json", stored.bytes, enc(live))
    assert.strictEqual(written._tag, "Write", "JSON is always written (an unresolved field is left out)")
    if (written._tag !== "Write") return false
    assert.notInclude(dec(written.bytes), REDACTED)
    const back = JSON.parse(dec(written.bytes))
    // Where the old value held a whole secret and the live file has a credential scalar at that place, the live one is written.
    const liveSecrets = new Set(literalSecrets(live))
    for (const pointer of stored.redacted) {
      if (at(JSON.parse(dec(stored.bytes)), pointer) !== REDACTED) continue
      const liveValue = at(live, pointer)
      if (written.unresolved.includes(pointer)) continue
      assert.deepStrictEqual(at(back, pointer), liveValue, pointer)
      assert.isTrue(liveSecrets.has(liveValue) || typeof liveValue !== "object" || liveValue === null, pointer)
    }
    return true
  }, { fastCheck: { numRuns: 300 } })

  it("history content: JSON without secrets stays byte for byte; unparsable JSON is skipped; a file of no known format is read by lines", () => {
    const pretty = new TextEncoder().encode('{ "theme":"dark" }')
    assert.deepStrictEqual(historyContent("settings.json", pretty), { _tag: "Keep", bytes: pretty, redacted: [] })
    assert.strictEqual(historyContent("settings.json", new TextEncoder().encode("{"))._tag, "Skip")
    // A redacted value is rewritten in place: the layout around it stays.
    const live = new TextEncoder().encode('{"apiKey":"sk-1",  "model":"m"}')
    const stored = historyContent("models.json", live)
    assert.deepStrictEqual(stored._tag === "Keep" && dec(stored.bytes), `{"apiKey":${JSON.stringify(REDACTED)},  "model":"m"}`)
    // A rollback to a redacted copy of the same JSON keeps the live file's bytes.
    const back = stored._tag === "Keep" ? rollbackContent("models.json", stored.bytes, live) : undefined
    assert.strictEqual(back?._tag === "Write" && back.bytes, live)
    const txt = new TextEncoder().encode("just notes\nmodel: fast\n")
    assert.deepStrictEqual(historyContent("a.txt", txt), { _tag: "Keep", bytes: txt, redacted: [] })
    assert.strictEqual(historyContent("a.txt", new TextEncoder().encode('password: "x1"'))._tag, "Skip")
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
