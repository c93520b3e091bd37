/**
 * The one redaction rule (docs/config-history.md "Config history", SPEC BK1) over generated documents in every format it reads:
 * a literal placed under any credential key at any depth, as a URL's password, or as a credential flag's value
 * in an argument array is gone from the stored bytes, and every other byte is the same (the stored text is
 * compared with the same document rendered with the placeholders in place); a rollback against a live file
 * with rotated credentials writes the revision with the live credentials; comments, files of no known format
 * and the parsers' limits.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import { parseAllDocuments, stringify as yamlStringify } from "yaml"
import { type Leaf as TreeLeaf, MAX_TREE_BYTES, MAX_TREE_DEPTH, pointerOf } from "../../src/domain/ConfigTree.js"
import { JSON_FORMAT } from "../../src/domain/ConfigTreeJson.js"
import { YAML_FORMAT } from "../../src/domain/ConfigTreeYaml.js"
import { configFormatOf, credentialRanges, historyContent, isCredentialKey, REDACTED, rollbackContent } from "../../src/domain/Redaction.js"

const enc = (s: string) => new TextEncoder().encode(s)
const dec = (b: Uint8Array) => new TextDecoder().decode(b)

// ---------------------------------------------------------------------------------------------------------
// A model of a config document, and a renderer per format

type Style = 0 | 1 | 2
type Leaf =
  /** A literal under a credential key (or after a credential flag): redacted whole. */
  | { readonly t: "secret"; readonly s: string; readonly style: Style }
  | { readonly t: "secretNum"; readonly n: number }
  /** A reference under a credential key: kept. */
  | { readonly t: "ref"; readonly s: string; readonly style: Style }
  | { readonly t: "bool"; readonly b: boolean }
  | { readonly t: "str"; readonly s: string; readonly style: Style }
  | { readonly t: "num"; readonly n: number }
  /** A URL with a password: only the password is redacted. */
  | { readonly t: "url"; readonly user: string; readonly pass: string; readonly host: string; readonly style: Style }
  /** `--api-key=value`: only the value is redacted. */
  | { readonly t: "flagEq"; readonly flag: string; readonly v: string; readonly style: Style }
  /** `--token`, followed by a secret. */
  | { readonly t: "flag"; readonly flag: string }
type Node = Leaf | { readonly t: "obj"; readonly entries: ReadonlyArray<readonly [string, Node]> } | { readonly t: "arr"; readonly items: ReadonlyArray<Node> }

const SECRET_KEYS = ["apiKey", "api_key", "token", "password", "pass", "auth", "key", "secret", "Authorization", "sessionKey",
  "_authToken", "X-Api-Key", "client_secret", "DB_PASSWORD"] as const
const PLAIN_KEYS = ["name", "model", "region", "maxTokens", "tokenizer", "tokenLimit", "keybindings", "author", "port", "theme",
  "args", "items", "baseUrl"] as const
const FLAGS = ["--token", "--api-key", "--password", "-token", "--client-secret"] as const

const marker = fc.stringMatching(/^[A-Za-z0-9]{3,10}$/).map((s) => `Sx${s}Q`)
const word = fc.stringMatching(/^[a-z]{1,8}$/).map((s) => `v${s}`)
const style = fc.constantFrom<Style>(0, 1, 2)
const REFS = ["${MY_TOKEN}", "OPENAI_API_KEY", "!pass show llm", "$HOME_KEY"] as const

interface Caps {
  /** Objects nest (else only the root, and INI sections one level down). */
  readonly depth: number
  readonly arrays: boolean
  /** Arrays may hold objects and arrays. */
  readonly nestedArrays: boolean
  /** Booleans exist (env files have strings only). */
  readonly booleans: boolean
  /** INI: the root's objects are sections of leaves and lists. */
  readonly sections: boolean
}

const credLeaf = (caps: Caps): fc.Arbitrary<Leaf> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ t: fc.constant("secret" as const), s: marker, style }) },
    // Eight digits: never a part of a plain number (at most six) or of anything else the document holds.
    { weight: 1, arbitrary: fc.record({ t: fc.constant("secretNum" as const), n: fc.integer({ min: 90_000_000, max: 99_999_999 }) }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant("ref" as const), s: fc.constantFrom(...REFS), style }) },
    ...(caps.booleans ? [{ weight: 1, arbitrary: fc.record({ t: fc.constant("bool" as const), b: fc.boolean() }) }] : [])
  )

const plainLeaf = (caps: Caps): fc.Arbitrary<Leaf> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.record({ t: fc.constant("str" as const), s: word, style }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant("num" as const), n: fc.integer({ min: 0, max: 100_000 }) }) },
    ...(caps.booleans ? [{ weight: 1, arbitrary: fc.record({ t: fc.constant("bool" as const), b: fc.boolean() }) }] : []),
    { weight: 2, arbitrary: fc.record({ t: fc.constant("url" as const), user: word, pass: marker, host: word, style }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant("flagEq" as const), flag: fc.constantFrom(...FLAGS), v: marker, style }) }
  )

/** An argument array: plain words, `--flag secret` pairs, `--flag=secret`. */
const argArray = (caps: Caps): fc.Arbitrary<Node> =>
  fc.array(
    fc.oneof(
      plainLeaf(caps).map((l) => [l]),
      fc.tuple(fc.constantFrom(...FLAGS), credLeaf(caps)).map(([flag, v]): Array<Leaf> => [{ t: "flag", flag }, v])
    ),
    { maxLength: 4 }
  ).map((groups) => ({ t: "arr" as const, items: groups.flat() }))

const node = (caps: Caps, depth: number, cred: boolean): fc.Arbitrary<Node> => {
  const leaf = cred ? credLeaf(caps) : plainLeaf(caps)
  const options: Array<fc.Arbitrary<Node>> = [leaf, leaf]
  if (caps.arrays) {
    const item = caps.nestedArrays && depth < caps.depth ? node(caps, depth + 1, cred) : leaf
    options.push(cred ? fc.array(item, { maxLength: 3 }).map((items) => ({ t: "arr" as const, items })) : argArray(caps))
    if (caps.nestedArrays && !cred) options.push(fc.array(item, { maxLength: 3 }).map((items) => ({ t: "arr" as const, items })))
  }
  if (depth < caps.depth) options.push(object(caps, depth + 1, cred))
  return fc.oneof(...options)
}

const object = (caps: Caps, depth: number, cred: boolean): fc.Arbitrary<Node> =>
  fc.uniqueArray(
    fc.oneof(fc.constantFrom(...SECRET_KEYS), fc.constantFrom(...PLAIN_KEYS)).chain((k) =>
      node(caps, depth, cred || isCredentialKey(k)).map((v) => [k, v] as const)
    ),
    { selector: ([k]) => k, maxLength: 5 }
  ).map((entries) => ({ t: "obj" as const, entries }))

/** INI: root leaves and lists, then sections of leaves and lists. */
const iniDoc: fc.Arbitrary<Node> = (() => {
  const caps: Caps = { depth: 0, arrays: true, nestedArrays: false, booleans: true, sections: true }
  const entries = (cred: boolean) =>
    fc.uniqueArray(
      fc.oneof(fc.constantFrom(...SECRET_KEYS), fc.constantFrom(...PLAIN_KEYS)).chain((k) =>
        node(caps, 0, cred || isCredentialKey(k)).map((v) => [k, v] as const)
      ),
      { selector: ([k]) => k, maxLength: 4 }
    )
  return fc.tuple(
    entries(false),
    fc.uniqueArray(fc.oneof(fc.constantFrom(...SECRET_KEYS), fc.constantFrom(...PLAIN_KEYS)).chain((k) =>
      entries(isCredentialKey(k)).map((e) => [k, { t: "obj" as const, entries: e }] as const)
    ), { selector: ([k]) => k, maxLength: 3 })
  ).map(([root, sections]) => ({ t: "obj" as const, entries: [...root.filter(([k]) => !sections.some(([s]) => s === k)), ...sections] }))
})()

const DEEP: Caps = { depth: 3, arrays: true, nestedArrays: true, booleans: true, sections: false }
const TOML_CAPS: Caps = { depth: 3, arrays: true, nestedArrays: false, booleans: true, sections: false }
const ENV_CAPS: Caps = { depth: 0, arrays: false, nestedArrays: false, booleans: false, sections: false }

/** How a leaf is written: `live` as generated, `stored` with each credential replaced as history must hold it. */
type Mode = "live" | "stored"

/** The string a leaf holds, and whether its value is replaced in `stored` (and by what). */
const leafString = (l: Leaf): string | null =>
  l.t === "secret" || l.t === "ref" || l.t === "str" ? l.s
    : l.t === "url" ? `https://${l.user}:${l.pass}@${l.host}.example/p`
    : l.t === "flagEq" ? `${l.flag}=${l.v}`
    : l.t === "flag" ? l.flag
    : null
const storedString = (l: Leaf): string | null =>
  l.t === "secret" || l.t === "secretNum" ? REDACTED
    : l.t === "url" ? `https://${l.user}:${REDACTED}@${l.host}.example/p`
    : l.t === "flagEq" ? `${l.flag}=${REDACTED}`
    : null
const styleOf = (l: Leaf): Style => ("style" in l ? l.style : 0)

interface Dialect {
  readonly name: string
  readonly render: (doc: Node, mode: Mode) => string
}

const q = (s: string) => JSON.stringify(s)
const single = (s: string) => `'${s}'`

/** JSON, JSONC, JSON5. */
const jsonDialect = (name: string, kind: "json" | "jsonc" | "json5"): Dialect => {
  const scalar = (l: Leaf, mode: Mode): string => {
    const replaced = mode === "stored" ? storedString(l) : null
    if (replaced !== null) return q(replaced)
    if (l.t === "num" || l.t === "secretNum") return String(l.n)
    if (l.t === "bool") return String(l.b)
    const s = leafString(l)!
    return kind === "json5" && styleOf(l) === 1 ? single(s) : q(s)
  }
  const key = (k: string) => (kind === "json5" && /^[A-Za-z_$][\w$]*$/.test(k) ? k : q(k))
  const render = (n: Node, mode: Mode, ind: string): string => {
    if (n.t === "obj" || n.t === "arr") {
      const inner = ind + "  "
      const parts = n.t === "obj"
        ? n.entries.map(([k, v], i) => `${kind !== "json" && i % 2 === 1 ? `${inner}// note ${i}\n` : ""}${inner}${key(k)}: ${render(v, mode, inner)}`)
        : n.items.map((v) => `${inner}${render(v, mode, inner)}`)
      if (parts.length === 0) return n.t === "obj" ? "{}" : "[]"
      const trailing = kind !== "json" && parts.length % 2 === 0 ? "," : ""
      return `${n.t === "obj" ? "{" : "["}\n${parts.join(",\n")}${trailing}\n${ind}${n.t === "obj" ? "}" : "]"}`
    }
    return scalar(n, mode) + (kind === "jsonc" && styleOf(n) === 2 ? " /* c */" : "")
  }
  return { name, render: (doc, mode) => render(doc, mode, "") + "\n" }
}

const yamlDialect: Dialect = (() => {
  const plainSafe = (s: string) => /^[A-Za-z0-9_$][^#]*$/.test(s) && !/: /.test(s)
  const scalar = (l: Leaf, mode: Mode, flow: boolean): string => {
    const replaced = mode === "stored" ? storedString(l) : null
    if (replaced !== null) return q(replaced)
    if (l.t === "num" || l.t === "secretNum") return String(l.n)
    if (l.t === "bool") return String(l.b)
    const s = leafString(l)!
    const st = styleOf(l)
    return st === 1 ? `'${s.replace(/'/g, "''")}'` : st === 2 && !flow && plainSafe(s) ? s : q(s)
  }
  const flow = (n: Node, mode: Mode): string =>
    n.t === "obj" ? `{ ${n.entries.map(([k, v]) => `${k}: ${flow(v, mode)}`).join(", ")} }`
      : n.t === "arr" ? `[ ${n.items.map((v) => flow(v, mode)).join(", ")} ]`
      : scalar(n, mode, true)
  const inBlock = (n: Node, mode: Mode): string => (n.t === "obj" || n.t === "arr" ? flow(n, mode) : scalar(n, mode, false))
  const block = (n: Node, mode: Mode, ind: string): string => {
    if (n.t === "obj") {
      if (n.entries.length === 0) return `${ind}{}\n`
      return n.entries.map(([k, v], i) => {
        const comment = i % 2 === 1 ? `${ind}# note ${i}\n` : ""
        if (v.t === "obj" && v.entries.length > 0) return `${comment}${ind}${k}:\n${block(v, mode, ind + "  ")}`
        if (v.t === "arr" && v.items.length > 0) return `${comment}${ind}${k}:\n${block(v, mode, ind + "  ")}`
        return `${comment}${ind}${k}: ${inBlock(v, mode)}${styleOf(v as Leaf) === 2 ? " # c" : ""}\n`
      }).join("")
    }
    if (n.t === "arr") return n.items.map((v) => `${ind}- ${inBlock(v, mode)}\n`).join("")
    return `${ind}${scalar(n, mode, false)}\n`
  }
  return { name: "settings.yaml", render: (doc, mode) => `# settings\n${block(doc, mode, "")}` }
})()

const tomlDialect: Dialect = (() => {
  const scalar = (l: Leaf, mode: Mode): string => {
    const replaced = mode === "stored" ? storedString(l) : null
    if (replaced !== null) return q(replaced)
    if (l.t === "num" || l.t === "secretNum") return String(l.n)
    if (l.t === "bool") return String(l.b)
    const s = leafString(l)!
    return styleOf(l) === 1 ? single(s) : q(s)
  }
  const value = (n: Node, mode: Mode): string =>
    n.t === "arr"
      ? n.items.length % 2 === 0 ? `[${n.items.map((v) => value(v, mode)).join(", ")}]` : `[\n${n.items.map((v) => `  ${value(v, mode)}, # item\n`).join("")}]`
      : scalar(n as Leaf, mode)
  const table = (n: Node & { t: "obj" }, path: ReadonlyArray<string>, mode: Mode): string => {
    const here = n.entries.filter(([, v]) => v.t !== "obj").map(([k, v], i) => `${i % 2 === 1 ? "# note\n" : ""}${k} = ${value(v, mode)}\n`).join("")
    const subs = n.entries.filter(([, v]) => v.t === "obj").map(([k, v]) =>
      `\n[${[...path, k].join(".")}]\n${table(v as Node & { t: "obj" }, [...path, k], mode)}`).join("")
    return here + subs
  }
  return { name: "server.toml", render: (doc, mode) => `# server\n${table(doc as Node & { t: "obj" }, [], mode)}` }
})()

const iniDialect = (name: string): Dialect => {
  const scalar = (l: Leaf, mode: Mode): string => {
    const replaced = mode === "stored" ? storedString(l) : null
    if (replaced !== null) return q(replaced)
    if (l.t === "num" || l.t === "secretNum") return String(l.n)
    if (l.t === "bool") return String(l.b)
    const s = leafString(l)!
    return styleOf(l) === 1 ? q(s) : s
  }
  const entries = (n: Node & { t: "obj" }, mode: Mode) =>
    n.entries.filter(([, v]) => v.t !== "obj").map(([k, v], i) => {
      const sep = i % 2 === 0 ? " = " : "="
      const comment = i % 3 === 2 ? "; note\n" : ""
      return v.t === "arr" ? comment + v.items.map((x) => `${k}[]${sep}${scalar(x as Leaf, mode)}\n`).join("") : `${comment}${k}${sep}${scalar(v as Leaf, mode)}\n`
    }).join("")
  return {
    name,
    render: (doc, mode) => {
      const root = doc as Node & { t: "obj" }
      const sections = root.entries.filter(([, v]) => v.t === "obj").map(([k, v]) => `\n# section\n[${k}]\n${entries(v as Node & { t: "obj" }, mode)}`)
      return entries(root, mode) + sections.join("")
    }
  }
}

const envDialect: Dialect = {
  name: "prod.env",
  render: (doc, mode) =>
    (doc as Node & { t: "obj" }).entries.map(([k, v], i) => {
      const l = v as Leaf
      const replaced = mode === "stored" ? storedString(l) : null
      const s = replaced !== null ? q(replaced)
        : l.t === "num" || l.t === "secretNum" ? String(l.n)
        : ((s: string) => styleOf(l) === 1 && !s.includes("$") ? q(s) : styleOf(l) === 2 || /\s/.test(s) ? single(s) : s)(leafString(l)!)
      return `${i % 2 === 1 ? "# note\n" : ""}${i % 3 === 2 ? "export " : ""}${k}=${s}${i % 2 === 0 ? " # c" : ""}\n`
    }).join("")
}

const envDoc = fc.uniqueArray(
  fc.oneof(fc.constantFrom(...SECRET_KEYS), fc.constantFrom(...PLAIN_KEYS)).chain((k) =>
    (isCredentialKey(k) ? credLeaf(ENV_CAPS) : plainLeaf(ENV_CAPS)).map((v) => [k, v as Node] as const)
  ),
  { selector: ([k]) => k, maxLength: 6 }
).map((entries): Node => ({ t: "obj", entries }))

const FORMATS: ReadonlyArray<readonly [Dialect, fc.Arbitrary<Node>]> = [
  [jsonDialect("models.json", "json"), object(DEEP, 0, false)],
  [jsonDialect("settings.jsonc", "jsonc"), object(DEEP, 0, false)],
  [jsonDialect("settings.json5", "json5"), object(DEEP, 0, false)],
  [yamlDialect, object(DEEP, 0, false)],
  [tomlDialect, object(TOML_CAPS, 0, false)],
  [iniDialect("server.ini"), iniDoc],
  [iniDialect(".npmrc"), iniDoc],
  [envDialect, envDoc]
]

/** Every credential literal a document holds (markers, numbers under credential keys). */
const secretsIn = (n: Node): Array<string> =>
  n.t === "obj" ? n.entries.flatMap(([, v]) => secretsIn(v))
    : n.t === "arr" ? n.items.flatMap(secretsIn)
    : n.t === "secret" ? [n.s] : n.t === "secretNum" ? [String(n.n)] : n.t === "url" ? [n.pass] : n.t === "flagEq" ? [n.v] : []

/** The same document with every credential rotated (new markers, new numbers), nothing else changed. */
const rotate = (n: Node, salt: string): Node =>
  n.t === "obj" ? { t: "obj", entries: n.entries.map(([k, v]) => [k, rotate(v, salt)] as const) }
    : n.t === "arr" ? { t: "arr", items: n.items.map((v) => rotate(v, salt)) }
    : n.t === "secret" ? { ...n, s: n.s + salt }
    : n.t === "secretNum" ? { ...n, n: n.n + 7 }
    : n.t === "url" ? { ...n, pass: n.pass + salt }
    : n.t === "flagEq" ? { ...n, v: n.v + salt }
    : n

/** The document's plain strings changed (credentials as they were). */
const editPlain = (n: Node): Node =>
  n.t === "obj" ? { t: "obj", entries: n.entries.map(([k, v]) => [k, editPlain(v)] as const) }
    : n.t === "arr" ? { t: "arr", items: n.items.map(editPlain) }
    : n.t === "str" ? { ...n, s: n.s + "z" }
    : n

const hasSecret = (n: Node) => secretsIn(n).length > 0

describe("the redaction rule over every format", () => {
  it("the generators' keys are what they say", () => {
    for (const k of SECRET_KEYS) assert.isTrue(isCredentialKey(k), k)
    for (const k of PLAIN_KEYS) assert.isFalse(isCredentialKey(k), k)
    for (const f of FLAGS) assert.isTrue(isCredentialKey(f.replace(/^-+/, "")), f)
  })

  for (const [dialect, doc] of FORMATS) {
    describe(dialect.name, () => {
      it.prop("no credential is left, and every other byte is the same", [doc, fc.boolean()], ([d, crlf]) => {
        const eol = (t: string) => (crlf ? t.replace(/\n/g, "\r\n") : t)
        const live = eol(dialect.render(d, "live"))
        const stored = historyContent(dialect.name, enc(live))
        assert.strictEqual(stored._tag, "Keep", stored._tag === "Skip" ? `${stored.reason}\n${live}` : "")
        if (stored._tag !== "Keep") return false
        const text = dec(stored.bytes)
        for (const secret of secretsIn(d)) assert.notInclude(text, secret, live)
        assert.strictEqual(text, eol(dialect.render(d, "stored")), live)
        // Stored again, it stays as it is.
        const again = historyContent(dialect.name, stored.bytes)
        assert.deepStrictEqual(again._tag === "Keep" && dec(again.bytes), text)
        return true
      }, { fastCheck: { numRuns: 60 } })

      it.prop("a rollback writes the revision with the live credentials", [doc, fc.stringMatching(/^[a-z]{1,4}$/), fc.boolean()], ([d, salt, crlf]) => {
        const eol = (t: string) => (crlf ? t.replace(/\n/g, "\r\n") : t)
        const stored = historyContent(dialect.name, enc(eol(dialect.render(editPlain(d), "live"))))
        assert.strictEqual(stored._tag, "Keep")
        if (stored._tag !== "Keep") return false
        // Live: the credentials rotated since, the plain values edited back.
        const rotated = rotate(d, salt)
        const live = enc(eol(dialect.render(rotated, "live")))
        const back = rollbackContent(dialect.name, stored.bytes, live)
        assert.strictEqual(back._tag, "Write", back._tag === "KeepLive" ? back.reason : "")
        if (back._tag !== "Write") return false
        assert.strictEqual(dec(back.bytes), eol(dialect.render(editPlain(rotated), "live")))
        assert.deepStrictEqual(back.unresolved, [])
        return true
      }, { fastCheck: { numRuns: 40 } })

      it.prop("with no live file, a placeholder is never written", [doc], ([d]) => {
        const stored = historyContent(dialect.name, enc(dialect.render(d, "live")))
        if (stored._tag !== "Keep") return false
        const back = rollbackContent(dialect.name, stored.bytes, undefined)
        if (back._tag === "Write") assert.notInclude(dec(back.bytes), REDACTED)
        // Only JSON is rewritten around a value it cannot merge back; the other formats keep the file as it is.
        assert.strictEqual(back._tag, dialect.name.endsWith(".json") || stored.redacted.length === 0 ? "Write" : "KeepLive")
        assert.strictEqual(back.unresolved.length > 0, stored.redacted.length > 0)
        assert.strictEqual(stored.redacted.length > 0, hasSecret(d))
        return true
      }, { fastCheck: { numRuns: 30 } })

      it.prop("a comment that holds a credential keeps the file out", [doc, fc.constantFrom(...SECRET_KEYS), marker], ([d, key, secret]) => {
        if (dialect.name.endsWith(".json")) return true
        const comment = dialect.name.endsWith(".json5") || dialect.name.endsWith(".jsonc") ? "//" : dialect.name.endsWith(".ini") ? ";" : "#"
        const live = `${comment} old: ${key} = ${secret}\n${dialect.render(d, "live")}`
        const stored = historyContent(dialect.name, enc(live))
        assert.strictEqual(stored._tag, "Skip")
        assert.match(stored._tag === "Skip" ? stored.reason : "", /^line 1 holds what looks like a credential/)
        assert.notInclude(stored._tag === "Skip" ? stored.reason : "", secret, "a reason never quotes the credential")
        return true
      }, { fastCheck: { numRuns: 25 } })
    })
  }
})

describe("files of no known format: read line by line", () => {
  const line = fc.stringMatching(/^[a-z ]{0,30}$/)
  it.prop("a line that assigns a credential, a credential flag or a URL's password keeps the file out; else it is kept byte for byte", [
    fc.array(line, { maxLength: 8 }),
    fc.nat(),
    fc.constantFrom(...SECRET_KEYS),
    marker,
    fc.constantFrom(
      (k: string, v: string) => `${k} = ${v}`,
      (k: string, v: string) => `  ${k}: ${v}`,
      (k: string, v: string) => `# ${k}=${v}`,
      (k: string, v: string) => `export ${k}="${v}"`,
      (k: string, v: string) => `"${k}": "${v}",`,
      (_k: string, v: string) => `run --api-key ${v} now`,
      (_k: string, v: string) => `db https://me:${v}@db.example/x`,
      (_k: string, v: string) => `curl -H 'Authorization: Bearer ${v}'`
    )
  ], ([lines, at, key, secret, shape]) => {
    const plain = enc(lines.join("\n"))
    assert.deepStrictEqual(historyContent("notes.txt", plain), { _tag: "Keep", bytes: plain, redacted: [] })
    const withSecret = [...lines]
    withSecret.splice(at % (lines.length + 1), 0, shape(key, secret))
    const stored = historyContent("notes.txt", enc(withSecret.join("\n")))
    assert.strictEqual(stored._tag, "Skip", withSecret.join("\n"))
    return true
  }, { fastCheck: { numRuns: 100 } })

  it("a credential key whose value is not on its line keeps the file out; an empty value or a reference does not", () => {
    for (const text of ["password = \\\n  hunter2\n", "token: |\n  abc\n", "key = \"\"\"\nabc\"\"\"\n", "secret =\n", "apiKey = [\n\"x\"]\n",
      "--token \\\n  abc\n", "token = 'abc\ndef'\n"]) {
      assert.strictEqual(historyContent("app.conf", enc(text))._tag, "Skip", text)
    }
    for (const text of ["password = \"\"\n", "token = ${APP_TOKEN}\n", "maxTokens = 10\n", "note: the token lives in the keychain\n"]) {
      assert.strictEqual(historyContent("app.conf", enc(text))._tag, "Keep", text)
    }
  })

  it("bytes that are not UTF-8 are read too", () => {
    const bytes = new Uint8Array([0xff, 0xfe, 0x00, ...enc("\ntoken=SEKRET1\n"), 0x80])
    assert.strictEqual(historyContent("blob.bin", bytes)._tag, "Skip")
    const harmless = new Uint8Array([0xff, 0xfe, 0x00, 0x80, 0x0a])
    assert.deepStrictEqual(historyContent("blob.bin", harmless), { _tag: "Keep", bytes: harmless, redacted: [] })
  })
})

describe("the rule's edges", () => {
  const stored = (name: string, text: string) => {
    const c = historyContent(name, enc(text))
    return c._tag === "Keep" ? dec(c.bytes) : `SKIP: ${c.reason}`
  }

  it("any scalar type under a credential key; a boolean only when written as one", () => {
    assert.strictEqual(stored("a.yaml", "auth: true\npin:\n  password: 1234\n"), `auth: true\npin:\n  password: ${q(REDACTED)}\n`)
    // YAML 1.1 reads `yes` as a boolean: under a credential key it is a value that is not written as a boolean.
    assert.strictEqual(stored("a.yaml", "%YAML 1.1\n---\npassword: yes\nenabled: yes\n"), `%YAML 1.1\n---\npassword: ${q(REDACTED)}\nenabled: yes\n`)
    assert.strictEqual(stored("a.toml", "token = 1979-05-27\n"), `token = ${q(REDACTED)}\n`)
    assert.strictEqual(stored("a.json", '{"secret": 1e3, "ok": null, "key": null}'), `{"secret": ${q(REDACTED)}, "ok": null, "key": null}`)
  })

  it("references are kept; credentials inside strings are replaced where they stand", () => {
    assert.strictEqual(stored("a.json", '{"apiKey": "OPENAI_API_KEY", "token": "${T}", "password": "!pass show x"}'),
      '{"apiKey": "OPENAI_API_KEY", "token": "${T}", "password": "!pass show x"}')
    assert.strictEqual(stored("a.json", '{"cmd": "npx server --api-key sk-1 --port 3", "u": "https://h/x?access_token=abc&n=1"}'),
      `{"cmd": ${q(`npx server --api-key ${REDACTED} --port 3`)}, "u": ${q(`https://h/x?access_token=${REDACTED}`)}}`)
    assert.strictEqual(stored("a.yaml", "headers: ['Authorization: Bearer abc123']\n"), `headers: [${q(`Authorization: Bearer ${REDACTED}`)}]\n`)
  })

  it("a name/value pair naming a credential, a PEM private key, a `!word` that is no command", () => {
    assert.strictEqual(
      stored("a.json", '{"env": [{"name": "GITHUB_TOKEN", "value": "ghp_abc"}, {"name": "REGION", "value": "eu"}]}'),
      `{"env": [{"name": "GITHUB_TOKEN", "value": ${q(REDACTED)}}, {"name": "REGION", "value": "eu"}]}`
    )
    const pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----\n"
    assert.strictEqual(stored("a.json", JSON.stringify({ note: pem })),
      JSON.stringify({ note: `-----BEGIN OPENSSH PRIVATE KEY-----${REDACTED}-----END OPENSSH PRIVATE KEY-----\n` }))
    assert.match(stored("id.txt", `# my key\n${pem}`), /^SKIP: line 2 holds what looks like a credential \(a private key\)/)
    assert.strictEqual(stored("a.json", '{"password": "!hunter2", "token": "!op read x"}'), `{"password": ${q(REDACTED)}, "token": "!op read x"}`)
  })

  it("reading free text is linear: a megabyte of repeated patterns is judged, not stuck", () => {
    const big = 1 << 20
    assert.match(stored("a.txt", "token=".repeat(big / 6)), /^SKIP: line 1 holds what looks like a credential \(token = …\)/)
    assert.match(stored("a.txt", "token='a ".repeat(big / 9)), /^SKIP: line 1/)
    assert.strictEqual(stored("a.txt", "a".repeat(big)), "a".repeat(big))
    assert.strictEqual(stored("a.txt", "a://".repeat(big / 4)), "a://".repeat(big / 4))
    const urls = JSON.stringify({ a: "x://a:b@".repeat(big / 16) })
    assert.notInclude(stored("a.json", urls), ":b@")
  })

  it("what cannot be redacted in place is skipped with the reason", () => {
    assert.match(stored("a.yaml", "base: &b sk-1\nprovider:\n  apiKey: *b\n"), /^SKIP: the credential at \/provider\/apiKey is reached through a YAML alias/)
    assert.match(stored("a.toml", 'token = """\nabc"""\n'), /^SKIP: not valid TOML \(a multi-line string \(not read\)/)
    assert.match(stored("a.toml", "auth = { token = 'x' }\n"), /^SKIP: not valid TOML \(an inline table \(not read\)/)
    assert.match(stored("a.ini", "password = abc ; rotated\n"), /^SKIP: not valid INI/)
    assert.match(stored("a.ini", "[db]\n  password = abc\n"), /^SKIP: not valid INI \(an indented line/)
    assert.match(stored("a.env", "TOKEN=abc\\ def\n"), /^SKIP: not valid env/)
    assert.match(stored("a.env", "TOKEN=\"a$B\"\n"), /^SKIP: not valid env/)
    assert.match(stored("a.json", '{"a": 1, "a": 2}'), /^SKIP: not valid JSON \(a duplicate key "a"/)
    assert.match(stored("a.yaml", "a: 1\na: 2\n"), /^SKIP: not valid YAML/)
    assert.match(stored("a.json5", "{ a: 1, // token: abc123\n}"), /^SKIP: line 1 holds what looks like a credential \(token = …\) outside a value/)
    assert.match(stored("a.yaml", "\"https://me:pw1@h\": 1\n"), /^SKIP: line 1 holds what looks like a credential \(a URL's password\)/)
  })

  it("the parsers are bounded: size, depth, values, YAML aliases", () => {
    const deep = "[".repeat(MAX_TREE_DEPTH + 2) + "]".repeat(MAX_TREE_DEPTH + 2)
    assert.match(stored("a.json", deep), /^SKIP: not valid JSON \(nested deeper than/)
    // A "billion laughs" stream: nine levels of ten aliases each would be 10^9 values.
    const laughs = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for (let i = 1; i < 9; i++) {
      const prev = String.fromCharCode(96 + i)
      const cur = String.fromCharCode(97 + i)
      laughs.push(`${cur}: &${cur} [${Array.from({ length: 10 }, () => `*${prev}`).join(", ")}]`)
    }
    assert.match(stored("a.yaml", laughs.join("\n") + "\n"), /^SKIP: not valid YAML \(more than/)
    assert.match(stored("a.txt", " ".repeat(MAX_TREE_BYTES + 1)), /^SKIP: over \d+ bytes, too large to read/)
  })

  it("formats by name", () => {
    const label = (n: string) => configFormatOf(n)?.label ?? null
    assert.deepStrictEqual(
      ["a.json", "a.JSONC", "a.json5", "a.yml", "a.yaml", "a.toml", "a.ini", ".npmrc", "x.npmrc", ".env", ".env.local", "prod.env", "a.txt", "config"].map(label),
      ["JSON", "JSONC", "JSON5", "YAML", "YAML", "TOML", "INI", "INI", "INI", "env", "env", "env", null, null]
    )
  })

  it("a credential range never takes in more than a line", () => {
    for (const r of credentialRanges("token = \"abc\ndef\"\n")) assert.notInclude("token = \"abc\ndef\"\n".slice(r.start, r.end), "\n")
  })
})

describe("the readers agree with the reference readers", () => {
  /** Leaves of a plain JSON value, as (pointer, value) pairs. */
  const flatten = (v: unknown, path: ReadonlyArray<string | number> = []): Array<readonly [string, unknown]> =>
    Array.isArray(v) ? v.flatMap((x, i) => flatten(x, [...path, i]))
      : typeof v === "object" && v !== null ? Object.entries(v).flatMap(([k, x]) => flatten(x, [...path, k]))
      : [[pointerOf(path), v]]
  const ours = (leaves: ReadonlyArray<TreeLeaf>) =>
    leaves.map((l) => [pointerOf(l.path), l.value.type === "string" ? l.value.value : l.value.type === "number" ? Number(l.value.raw)
      : l.value.type === "boolean" ? l.value.value : l.value.type === "null" ? null : l.value.raw] as const)

  it.prop("JSON: the same leaves as JSON.parse", [fc.jsonValue({ maxDepth: 4 }), fc.constantFrom(0, 2, "\t")], ([v, space]) => {
    const text = JSON.stringify(v, null, space)
    const parsed = JSON_FORMAT.parse(text)
    assert.isTrue(parsed.ok)
    if (!parsed.ok) return false
    const expected = flatten(JSON.parse(text))
    assert.deepStrictEqual(ours(parsed.tree.leaves), expected)
    // Each value's span is exactly its source text.
    parsed.tree.leaves.forEach((l, i) => assert.deepStrictEqual(JSON.parse(text.slice(l.start, l.end)), expected[i]![1]))
    return true
  }, { fastCheck: { numRuns: 100 } })

  it.prop("YAML: the same leaves as yaml's own toJS", [fc.jsonValue({ maxDepth: 4 })], ([v]) => {
    const text = yamlStringify(v)
    const parsed = YAML_FORMAT.parse(text)
    assert.isTrue(parsed.ok, parsed.ok ? "" : `${parsed.why}\n${text}`)
    if (!parsed.ok) return false
    const docs = parseAllDocuments(text)
    const js = Array.isArray(docs) && docs.length === 1 ? docs[0]!.toJS() : undefined
    assert.deepStrictEqual(ours(parsed.tree.leaves), flatten(js))
    return true
  }, { fastCheck: { numRuns: 100 } })
})
