/**
 * On-disk formats (docs/formats.md "On-disk formats"): the run manifest and the lease, v1 and v2, and markers.
 * Other tools read these files, so the shapes are stable.
 */
import type * as Either from "effect/Either"
import type { ParseOptions } from "effect/SchemaAST"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { DecodeFailure } from "./Errors.js"

/** Manifests larger than this are refused (unowned), never parsed. */
export const MANIFEST_MAX_BYTES = 4096
export const LEASE_MAX_BYTES = 4096
export const MARKER_MAX_BYTES = 4096

const NonNegativeInt = Schema.Number.pipe(Schema.int(), Schema.nonNegative())
const EpochMs = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())

export const RunKind = Schema.Literal("generated", "named")
export type RunKind = typeof RunKind.Type

export const ManifestV2 = Schema.Struct({
  version: Schema.Literal(2),
  category: Schema.String,
  tenant: Schema.String,
  runId: Schema.String,
  kind: RunKind,
  createdAt: EpochMs,
  createdBy: Schema.Struct({ host: Schema.String, pid: NonNegativeInt }),
  releasedAt: Schema.optional(EpochMs)
})
export type ManifestV2 = typeof ManifestV2.Type

/** Written by earlier Pi builds; read as owned. */
export const ManifestV1 = Schema.Struct({
  version: Schema.Literal(1),
  category: Schema.String,
  tenant: Schema.String,
  runId: Schema.String,
  createdAt: EpochMs
})
export type ManifestV1 = typeof ManifestV1.Type

export const Manifest = Schema.Union(ManifestV2, ManifestV1)
export type Manifest = typeof Manifest.Type

export const LeaseV2 = Schema.Struct({
  version: Schema.Literal(2),
  host: Schema.String,
  /** `/etc/machine-id` of the holder's machine (leases written before it was recorded lack it). */
  machineId: Schema.optional(Schema.String),
  bootId: Schema.optional(Schema.String),
  pid: NonNegativeInt,
  processStartedAt: Schema.optional(Schema.Number),
  acquiredAt: EpochMs,
  heartbeatAt: EpochMs
})
export type LeaseV2 = typeof LeaseV2.Type

/** Written by earlier Pi builds; honoured. */
export const LeaseV1 = Schema.Struct({
  version: Schema.Literal(1),
  hostname: Schema.String,
  pid: NonNegativeInt,
  createdAt: EpochMs
})
export type LeaseV1 = typeof LeaseV1.Type

export const Lease = Schema.Union(LeaseV2, LeaseV1)
export type Lease = typeof Lease.Type

/** Owner of a cleanup, prune or migration marker. */
export const Marker = Schema.Struct({
  version: Schema.Literal(1),
  purpose: Schema.String,
  host: Schema.String,
  machineId: Schema.optional(Schema.String),
  bootId: Schema.optional(Schema.String),
  pid: NonNegativeInt,
  processStartedAt: Schema.optional(Schema.Number),
  createdAt: EpochMs
})
export type Marker = typeof Marker.Type

/** A lease, normalised to the fields the liveness verdict needs. */
export interface LeaseFacts {
  readonly host: string
  /** The holder's machine identity; absent in records written before it was recorded. */
  readonly machineId?: string | undefined
  readonly bootId: string | undefined
  readonly pid: number
  readonly processStartedAt: number | undefined
  readonly heartbeatAt: number
  /** When the holder took it (leases only; markers have `createdAt`). */
  readonly acquiredAt?: number
}

export const leaseFacts = (lease: Lease | Marker): LeaseFacts =>
  "hostname" in lease
    ? { host: lease.hostname, bootId: undefined, pid: lease.pid, processStartedAt: undefined, heartbeatAt: lease.createdAt, acquiredAt: lease.createdAt }
    : {
      host: lease.host,
      machineId: lease.machineId,
      bootId: lease.bootId,
      pid: lease.pid,
      processStartedAt: lease.processStartedAt,
      heartbeatAt: "heartbeatAt" in lease ? lease.heartbeatAt : lease.createdAt,
      acquiredAt: "acquiredAt" in lease ? lease.acquiredAt : lease.createdAt
    }

const textDecoder = new TextDecoder("utf-8", { fatal: true })
const textEncoder = new TextEncoder()

/** A why names at most this many schema issues (the rest are counted), each cut to this many characters. */
const WHY_MAX_ISSUES = 3
const WHY_MAX_ISSUE_CHARS = 160

const EXPECTED = /^Expected (.*), actual (.*)$/s

const pathText = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "the document" : path.map((p) => (typeof p === "number" ? `[${p}]` : String(p))).join(".")

/** One line per field: a union's alternatives for one value are one issue (`Expected "a" or "b", actual "c"`). */
const issueTexts = (issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>): Array<string> => {
  const merged: Array<{ where: string; expected: Array<string>; actual: string | undefined; text: string }> = []
  for (const issue of issues) {
    const where = pathText(issue.path)
    const parts = issue._tag === "Missing" ? null : EXPECTED.exec(issue.message)
    const last = merged[merged.length - 1]
    if (parts !== null && last !== undefined && last.where === where && last.actual === parts[2]) {
      last.expected.push(parts[1]!)
      continue
    }
    merged.push({
      where,
      expected: parts === null ? [] : [parts[1]!],
      actual: parts?.[2],
      text: issue._tag === "Missing" ? `${where} is missing` : `${where}: ${issue.message}`
    })
  }
  return merged.map((m) => {
    const text = (m.actual === undefined ? m.text : `${m.where}: Expected ${m.expected.join(" or ")}, actual ${m.actual}`).replace(/\s+/g, " ")
    const chars = Array.from(text)
    return chars.length > WHY_MAX_ISSUE_CHARS ? `${chars.slice(0, WHY_MAX_ISSUE_CHARS - 1).join("")}…` : text
  })
}

/**
 * A schema failure in one short line: each field and what was wrong (`kind: Expected "generated" or "named",
 * actual "weird"`), never the schema's whole type (a report line, docs/formats.md "On-disk formats"). Pure.
 */
export const schemaMismatchWhy = (error: ParseResult.ParseError): string => {
  const texts = issueTexts(ParseResult.ArrayFormatter.formatErrorSync(error))
  const more = texts.length > WHY_MAX_ISSUES ? ` (+${texts.length - WHY_MAX_ISSUES} more)` : ""
  return `does not match the schema: ${texts.slice(0, WHY_MAX_ISSUES).join("; ")}${more}`
}

/** What `decodeJsonBytes` answers: the value, or the reason in one line and the `DecodeFailure` that keeps its cause. */
export type JsonDecoded<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly why: string; readonly failure: DecodeFailure }

/** Parse bytes as JSON, then decode with a schema; the reason (one line) and its cause on any failure. Pure. */
export const decodeJsonBytes = <A, I>(schema: Schema.Schema<A, I>, bytes: Uint8Array): JsonDecoded<A> => {
  let json: unknown
  try {
    json = JSON.parse(textDecoder.decode(bytes))
  } catch (e) {
    const why = `not valid JSON (${(e instanceof Error ? e.message : String(e)).replace(/\s+/g, " ")})`
    return { ok: false, why, failure: new DecodeFailure({ stage: "json", detail: why, cause: e }, { disableValidation: true }) }
  }
  return decodeJsonValue(schema, json)
}

/**
 * Each schema's decoder, made once: a view decodes tens of thousands of manifests with the same schema, and
 * making the decoder was a third of each decode. The decoder is a pure function of the schema.
 */
const decoders = new WeakMap<Schema.Schema.Any, (json: unknown, options: ParseOptions) => Either.Either<unknown, ParseResult.ParseError>>()

const decoderOf = <A, I>(schema: Schema.Schema<A, I>): (json: unknown, options: ParseOptions) => Either.Either<A, ParseResult.ParseError> => {
  let decoder = decoders.get(schema)
  if (decoder === undefined) {
    decoder = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>)
    decoders.set(schema, decoder)
  }
  return decoder as (json: unknown, options: ParseOptions) => Either.Either<A, ParseResult.ParseError>
}

const IGNORE_EXCESS: ParseOptions = { onExcessProperty: "ignore" }

/** A JSON value (already parsed) decoded with a schema, answered as `decodeJsonBytes` does. Pure. */
export const decodeJsonValue = <A, I>(schema: Schema.Schema<A, I>, json: unknown): JsonDecoded<A> => {
  let decoded: Either.Either<A, ParseResult.ParseError>
  try {
    decoded = decoderOf(schema)(json, IGNORE_EXCESS)
  } catch (e) {
    // The interpreter itself can throw on hostile JSON (a union's tag that is an object whose toString is not
    // a function: `{"version":{"toString":[]}}`); the file is then not what the schema describes, not a crash.
    const why = `does not match the schema: ${(e instanceof Error ? e.message : String(e)).replace(/\s+/g, " ")}`
    return { ok: false, why, failure: new DecodeFailure({ stage: "schema", detail: why, cause: e }, { disableValidation: true }) }
  }
  if (decoded._tag === "Right") return { ok: true, value: decoded.right }
  const why = schemaMismatchWhy(decoded.left)
  return { ok: false, why, failure: new DecodeFailure({ stage: "schema", detail: why, cause: decoded.left }, { disableValidation: true }) }
}

/**
 * `decodeJsonBytes(Manifest, bytes)`, the same answer, without the schema's interpreter for a well-formed
 * manifest (`wellFormedManifest`): a view decodes 40,000 of them, and the interpreter was most of each decode.
 * Anything else is decoded by the schema (its answer, its words). Pure.
 */
export const decodeManifestBytes = (bytes: Uint8Array): JsonDecoded<Manifest> => {
  let json: unknown
  try {
    json = JSON.parse(textDecoder.decode(bytes))
  } catch {
    return decodeJsonBytes(Manifest, bytes)
  }
  const value = wellFormedManifest(json)
  return value !== undefined ? { ok: true, value } : decodeJsonValue(Manifest, json)
}

const isEpochMs = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0
const isPlainRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * What `Manifest` decodes a JSON value to when the value is one of its members as written (every field of
 * the right type, excess fields ignored), built as the schema builds it (its fields in its order); `undefined`
 * for anything else, which the schema itself then judges (test/domain/Formats.test.ts checks they agree). Pure.
 */
const wellFormedManifest = (json: unknown): Manifest | undefined => {
  if (!isPlainRecord(json)) return undefined
  const { version, category, tenant, runId, createdAt } = json
  if (typeof category !== "string" || typeof tenant !== "string" || typeof runId !== "string" || !isEpochMs(createdAt)) return undefined
  if (version === 1) return { version, category, tenant, runId, createdAt }
  if (version !== 2) return undefined
  const { kind, createdBy } = json
  if ((kind !== "generated" && kind !== "named") || !isPlainRecord(createdBy)) return undefined
  const { host, pid } = createdBy
  if (typeof host !== "string" || typeof pid !== "number" || !Number.isSafeInteger(pid) || pid < 0) return undefined
  if (!Object.hasOwn(json, "releasedAt")) return { version, category, tenant, runId, kind, createdAt, createdBy: { host, pid } }
  const releasedAt = json.releasedAt
  return isEpochMs(releasedAt) ? { version, category, tenant, runId, kind, createdAt, createdBy: { host, pid }, releasedAt } : undefined
}

export const encodeJsonBytes = (value: unknown): Uint8Array => textEncoder.encode(JSON.stringify(value) + "\n")

/**
 * Room left after a run manifest's JSON for its `releasedAt` stamp (`,"releasedAt":` and 13 digits are 27
 * bytes), as spaces, which JSON allows: the stamp is then one write in place of the same length, not a temp
 * file renamed over the manifest (BENCHMARKS.md: that rename was a quarter of an acquire + release on ext4).
 */
export const MANIFEST_STAMP_ROOM = 32

/** `json`, then spaces up to `length` bytes and a newline; undefined if it does not fit. */
const padTo = (json: Uint8Array, length: number): Uint8Array | undefined => {
  if (json.length + 1 > length) return undefined
  const bytes = new Uint8Array(length).fill(0x20)
  bytes.set(json)
  bytes[length - 1] = 0x0a
  return bytes
}

/** A run manifest's bytes at exactly `length` (its JSON, spaces, a newline); undefined if it does not fit. */
export const encodeManifestPadded = (manifest: Manifest, length: number): Uint8Array | undefined =>
  padTo(textEncoder.encode(JSON.stringify(manifest)), length)

/** A new run manifest's bytes, with `MANIFEST_STAMP_ROOM` left for its stamp. */
export const encodeManifest = (manifest: Manifest): Uint8Array => {
  const json = textEncoder.encode(JSON.stringify(manifest))
  return padTo(json, json.length + MANIFEST_STAMP_ROOM + 1)!
}
