/**
 * The migration plan file (`pi-storage migrate --plan FILE`, docs/migrations.md "Migrations"): what an extension author ships
 * with a deployment, decoded here, pure, before anything is read or moved.
 *
 * YAML 1.2 (JSON is YAML 1.2, so a JSON plan reads the same): a plan is written by hand and reviewed, and
 * comments are where an author says why each step exists. The parser is strict: one document, the core schema
 * (`yes`, `no`, `on` stay strings), unique keys, no anchors, aliases or tags, at most `PLAN_FILE_MAX_BYTES`.
 * The value is then decoded by the `PlanFile` Schema (unknown keys refused, so a typo such as `kye:` is an
 * error, not an ignored line), and by `planProblem`, the check `Migration.runPlan` runs on every plan; every
 * error names where: `steps[2] ("usage").from`.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { isAlias, isNode, parseDocument, visit } from "yaml"
import { InvalidMigrationPlan } from "./Errors.js"
import {
  keyOfFields,
  type MigrationPlan,
  type PlanEntry,
  type PlanProblem,
  planProblem,
  type PlanRoot
} from "./MigrationPlan.js"
import { decodePlanPath } from "./PlanPath.js"
import { segmentViolation } from "./Segment.js"

/** A plan is a few dozen lines; anything near this is not a plan. */
export const PLAN_FILE_MAX_BYTES = 1024 * 1024
/** Steps in one plan. */
export const PLAN_MAX_STEPS = 10_000
const KEY_FIELD_MAX = 256

const Segment = (what: string) =>
  Schema.String.pipe(Schema.filter((s) => {
    const v = segmentViolation(s)
    return v === null ? undefined : `${what} ${JSON.stringify(s)} ${v.message}`
  }))

const PlanPathText = Schema.String.pipe(Schema.filter((s) => {
  const decoded = decodePlanPath(s)
  return decoded.ok ? undefined : `${JSON.stringify(s)} ${decoded.why}`
}))

/** `agent`, `{ web: <extId> }` or `{ agent-extension: <namespace> }`, as written in the file. */
type FileRoot = "agent" | { readonly web: string } | { readonly "agent-extension": string }

const ROOT_FORMS = "must be agent, { web: <extId> } or { agent-extension: <namespace> }"

const fileRootProblem = (u: unknown): string | undefined => {
  if (u === "agent") return undefined
  if (typeof u === "object" && u !== null && !Array.isArray(u)) {
    const keys = Object.keys(u)
    const only = keys.length === 1 ? keys[0] : undefined
    if (only === "web" || only === "agent-extension") {
      const v = segmentViolation((u as Record<string, unknown>)[only])
      return v === null ? undefined : `the ${only === "web" ? "extension id" : "extension namespace"} ${v.message}`
    }
  }
  return `${ROOT_FORMS} (got ${JSON.stringify(u)})`
}

const Root = Schema.Unknown.pipe(
  Schema.filter((u): u is FileRoot => fileRootProblem(u) === undefined, { message: (issue) => fileRootProblem(issue.actual) ?? ROOT_FORMS })
)

const KeyField = Schema.String.pipe(
  Schema.filter((s) => (s.length === 0 ? "a key field name must not be empty" : s.length > KEY_FIELD_MAX ? `a key field name is longer than ${KEY_FIELD_MAX} characters` : undefined))
)

const MoveStep = Schema.Struct({
  id: Segment("the step id"),
  kind: Schema.Literal("move"),
  root: Schema.optional(Root),
  from: PlanPathText,
  to: PlanPathText
})

const LedgerStep = Schema.Struct({
  id: Segment("the step id"),
  kind: Schema.Literal("merge-ledger"),
  root: Schema.optional(Root),
  from: PlanPathText,
  to: PlanPathText,
  /** A row's identity: one field name, or several (a composite key). */
  key: Schema.Union(KeyField, Schema.NonEmptyArray(KeyField)).annotations({
    message: () => ({ message: "must be a field name or a non-empty list of field names", override: true })
  }),
  /** Default `jsonl`: one JSON value per line. */
  format: Schema.optional(Schema.Literal("jsonl", "json-array").annotations({ message: () => ({ message: `must be "jsonl" or "json-array"`, override: true }) })),
  /** Whose row stays when both files hold the same key. Default `to` (the canonical place's row). */
  winner: Schema.optional(Schema.Literal("from", "to").annotations({ message: () => ({ message: `must be "from" or "to"`, override: true }) }))
})

/** The plan file, version 1. */
export const PlanFile = Schema.Struct({
  version: Schema.Literal(1),
  /** Names the journal `state/migrations/<id>.jsonl` and the conflict directory `migration-conflicts/<id>/`. */
  id: Segment("the plan id"),
  /** The root of every step that names none; a step without one (here or its own) is refused. */
  root: Schema.optional(Root),
  steps: Schema.Array(Schema.Union(MoveStep, LedgerStep)).pipe(Schema.maxItems(PLAN_MAX_STEPS))
}).annotations({ message: () => "a plan is a mapping of version: 1, id, root and steps" })
export type PlanFile = typeof PlanFile.Type

const toPlanRoot = (root: FileRoot): PlanRoot =>
  root === "agent" ? "agent" : "web" in root ? { web: root.web } : { agentExtension: root["agent-extension"] }

const refused = (source: string, at: string, detail: string) => Either.left(new InvalidMigrationPlan({ source, at, detail }))

/** `steps[2] ("usage").from` from a Schema path, the step's id read from the raw value when it has one. */
const where = (raw: unknown, path: ReadonlyArray<PropertyKey>): string => {
  let text = ""
  for (let i = 0; i < path.length; i++) {
    const key = path[i]!
    if (typeof key === "number") {
      text += `[${key}]`
      if (i === 1 && path[0] === "steps") {
        const step = (raw as { steps?: ReadonlyArray<{ id?: unknown }> }).steps?.[key]
        if (typeof step?.id === "string") text += ` (${JSON.stringify(step.id)})`
      }
    } else {
      text += `${text === "" ? "" : "."}${String(key)}`
    }
  }
  return text
}

/** A plan problem's place, in the file's words (`steps`, `agent-extension`). */
const problemAt = (problem: PlanProblem): string =>
  problem.index === undefined
    ? problem.field
    : `steps[${problem.index}]${problem.id === undefined ? "" : ` (${JSON.stringify(problem.id)})`}.${problem.field}`

const utf8 = new TextDecoder("utf-8", { fatal: true })

/** Parse the YAML text strictly; the value, or why it is refused. */
const parseYaml = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly why: string } => {
  const doc = parseDocument(text, {
    version: "1.2",
    schema: "core",
    uniqueKeys: true,
    strict: true,
    merge: false,
    prettyErrors: true,
    // "error": errors are collected (a second document is one), nothing is printed; warnings come from tags,
    // which are refused below.
    logLevel: "error"
  })
  const problem = doc.errors[0]
  if (problem !== undefined) {
    const first = problem.code === "MULTIPLE_DOCS" ? "the file holds more than one YAML document" : problem.message.split("\n")[0]!.replace(/:$/, "")
    return { ok: false, why: `not valid YAML: ${first}` }
  }
  // Anchors and aliases would let a short file expand into a huge plan; tags would make values other than JSON.
  let opaque: string | undefined
  visit(doc, (_key, node) => {
    if (isAlias(node)) opaque = `an alias (*${node.source}) (anchors and aliases are not allowed in a plan)`
    else if (isNode(node) && node.anchor !== undefined) opaque = `an anchor (&${node.anchor}) (anchors and aliases are not allowed in a plan)`
    else if (isNode(node) && node.tag !== undefined) opaque = `a tag (${node.tag}) (a plan holds plain values only)`
    return opaque === undefined ? undefined : visit.BREAK
  })
  if (opaque !== undefined) return { ok: false, why: `holds ${opaque}` }
  return { ok: true, value: doc.toJS() }
}

/**
 * Decode a plan file's bytes into the plan `Migration.runPlan` runs (`source` names the file in errors). Every
 * step needs a root (its own or the plan's): a plan for an extension that forgot it would otherwise look for
 * its files in the agent dir and report them absent, as if already migrated.
 */
export const decodeMigrationPlanFile = (bytes: Uint8Array, source: string): Either.Either<MigrationPlan, InvalidMigrationPlan> => {
  if (bytes.length > PLAN_FILE_MAX_BYTES) return refused(source, "", `the file is ${bytes.length} bytes, over the ${PLAN_FILE_MAX_BYTES}-byte limit`)
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return refused(source, "", "the file is not valid UTF-8")
  }
  const parsed = parseYaml(text)
  if (!parsed.ok) return refused(source, "", parsed.why)
  const decoded = Schema.decodeUnknownEither(PlanFile, { onExcessProperty: "error", errors: "first" })(parsed.value)
  if (Either.isLeft(decoded)) {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]!
    return refused(source, where(parsed.value, issue.path), issue.message)
  }
  const file = decoded.right
  const entries: Array<PlanEntry> = []
  for (let index = 0; index < file.steps.length; index++) {
    const step = file.steps[index]!
    const root = step.root ?? file.root
    if (root === undefined) {
      return refused(source, `steps[${index}] (${JSON.stringify(step.id)}).root`, `is missing, and the plan names no root: ${ROOT_FORMS}`)
    }
    const common = { id: step.id, from: step.from, to: step.to, root: toPlanRoot(root) }
    entries.push(
      step.kind === "move"
        ? { ...common, kind: "move" }
        : {
          ...common,
          kind: "merge-ledger",
          format: step.format ?? "jsonl",
          winner: step.winner ?? "to",
          key: keyOfFields(typeof step.key === "string" ? [step.key] : step.key)
        }
    )
  }
  const plan: MigrationPlan = { id: file.id, entries }
  const problem = planProblem(plan)
  return problem === undefined ? Either.right(plan) : refused(source, problemAt(problem), problem.detail)
}
