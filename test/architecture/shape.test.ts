/**
 * One service shape (docs/architecture.md "Architecture"): guards over the source text (TypeScript's parser, no type checking), so a
 * change that brings back a free-function twin or an environment read fails here, not in review.
 *
 * - Every program in `src/services` is a class `Context.Tag("pi-agent-storage/<its name>")` with a static
 *   `make` and a static `layer` (the ports `FileSystem`, `Host` and `ProcessRunner` have neither: their layers are the worlds),
 *   and no method of its interface takes the agent dir as a string (the doctor's used to).
 * - A `src/services` module that defines a service exports no free function taking the agent dir as a string
 *   (`agentDir: string`): programs read it from `AgentDir`.
 * - `process.env` appears in `src` only at the Node edge (`src/layers/NodeEnv.ts`, the Host port's `env`)
 *   and in `work run`'s hand-off of the environment to its child (`src/cli/commands/run.ts`).
 *
 * Each rule is also run against a planted violation, so the guard is known to bite.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import ts from "typescript"

const SRC = fileURLToPath(new URL("../../src/", import.meta.url))
const SERVICES = Path.join(SRC, "services")
/** Ports: implemented by the Node and Memory worlds (`NodeFileSystem.layer`, `MemoryHost.layer`, …). */
const PORTS = new Set(["FileSystem", "Host", "ProcessRunner"])
/** Where `process.env` may be read (paths relative to `src/`). */
const ENV_READERS = new Set(["layers/NodeEnv.ts", "cli/commands/run.ts"])

interface Source {
  readonly name: string
  readonly text: string
}

const parsed = new Map<string, ts.SourceFile>()
const parse = (source: Source): ts.SourceFile => {
  const key = `${source.name}\0${source.text}`
  let file = parsed.get(key)
  if (file === undefined) parsed.set(key, file = ts.createSourceFile(source.name, source.text, ts.ScriptTarget.Latest, true))
  return file
}

const isExported = (node: ts.Node): boolean =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)

const takesAgentDirString = (params: ReadonlyArray<ts.ParameterDeclaration>, file: ts.SourceFile): boolean =>
  params.some((p) => ts.isIdentifier(p.name) && /agentdir/i.test(p.name.text) && p.type !== undefined && /\bstring\b/.test(p.type.getText(file)))

/** `Context.Tag("key")` classes of a module: class name, tag key, static member names. */
const tagClasses = (file: ts.SourceFile) => {
  const out: Array<{
    readonly name: string
    readonly key: string | null
    readonly statics: ReadonlySet<string>
    readonly agentDirMethods: ReadonlyArray<string>
  }> = []
  for (const statement of file.statements) {
    if (!ts.isClassDeclaration(statement) || statement.name === undefined) continue
    const heritage = statement.heritageClauses?.flatMap((h) => h.types) ?? []
    // `Context.Tag("key")<Self, Shape>()`: the call whose callee is `Context.Tag`.
    let key: string | null = null
    let isTag = false
    // Methods of the inline interface that take the agent dir as a string (`(agentDir: string, …) => …`).
    const agentDirMethods: Array<string> = []
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && node.expression.getText(file) === "Context.Tag") {
        isTag = true
        const [arg] = node.arguments
        if (arg !== undefined && ts.isStringLiteral(arg)) key = arg.text
      }
      if (ts.isPropertySignature(node) && node.type !== undefined && ts.isFunctionTypeNode(node.type) && takesAgentDirString(node.type.parameters, file)) {
        agentDirMethods.push(node.name.getText(file))
      }
      ts.forEachChild(node, visit)
    }
    for (const h of heritage) visit(h)
    if (!isTag) continue
    const statics = new Set(
      statement.members
        .filter((m) => (ts.getModifiers(m as ts.HasModifiers) ?? []).some((x) => x.kind === ts.SyntaxKind.StaticKeyword))
        .flatMap((m) => (m.name !== undefined && ts.isIdentifier(m.name) ? [m.name.text] : []))
    )
    out.push({ name: statement.name.text, key, statics, agentDirMethods })
  }
  return out
}

/** Services whose shape is not the one shape. */
export const shapeViolations = (sources: ReadonlyArray<Source>): Array<string> =>
  sources.flatMap((source) =>
    tagClasses(parse(source)).flatMap((c) => {
      const problems: Array<string> = []
      if (c.key !== `pi-agent-storage/${c.name}`) problems.push(`${source.name}: ${c.name}'s tag is ${JSON.stringify(c.key)}, not "pi-agent-storage/${c.name}"`)
      if (!PORTS.has(c.name)) {
        for (const member of ["make", "layer"]) if (!c.statics.has(member)) problems.push(`${source.name}: ${c.name} has no static ${member}`)
      }
      for (const m of c.agentDirMethods) problems.push(`${source.name}: ${c.name}.${m} takes the agent dir as an argument; read AgentDir from the context`)
      return problems
    })
  )

/** The parameters of an exported function (`export const f = (…) =>`, `export function f(…)`), by export name. */
const exportedFunctions = (file: ts.SourceFile) => {
  const out: Array<{ readonly name: string; readonly params: ReadonlyArray<ts.ParameterDeclaration> }> = []
  for (const statement of file.statements) {
    if (!isExported(statement)) continue
    if (ts.isFunctionDeclaration(statement) && statement.name !== undefined) {
      out.push({ name: statement.name.text, params: statement.parameters })
    }
    if (ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations) {
        const init = d.initializer
        if (init !== undefined && ts.isIdentifier(d.name) && (ts.isArrowFunction(init) || ts.isFunctionExpression(init))) {
          out.push({ name: d.name.text, params: init.parameters })
        }
      }
    }
  }
  return out
}

/** Free functions taking the agent dir as a string beside a service in the same module. */
export const twinViolations = (sources: ReadonlyArray<Source>): Array<string> =>
  sources.flatMap((source) => {
    const file = parse(source)
    const services = tagClasses(file).map((c) => c.name).filter((n) => !PORTS.has(n))
    if (services.length === 0) return []
    return exportedFunctions(file)
      .filter((f) => takesAgentDirString(f.params, file))
      .map((f) => `${source.name}: exports ${f.name}(…agentDir: string…) beside the ${services.join(", ")} service; read AgentDir from the context`)
  })

/** `process.env` (or `process["env"]`) in code, comments and strings aside. */
export const envViolations = (sources: ReadonlyArray<Source>): Array<string> =>
  sources.flatMap((source) => {
    // Only files that could hold it are parsed (the parse then tells code from comments and strings).
    if (ENV_READERS.has(source.name) || !/process\s*(\.|\[)\s*["'`]?env/.test(source.text)) return []
    const file = parse(source)
    const found: Array<string> = []
    const visit = (node: ts.Node): void => {
      const isProcess = (e: ts.Expression) => ts.isIdentifier(e) && e.text === "process"
      if (
        (ts.isPropertyAccessExpression(node) && isProcess(node.expression) && node.name.text === "env") ||
        (ts.isElementAccessExpression(node) && isProcess(node.expression) && ts.isStringLiteral(node.argumentExpression) && node.argumentExpression.text === "env")
      ) {
        const { line } = file.getLineAndCharacterOfPosition(node.getStart(file))
        found.push(`${source.name}:${line + 1}: process.env outside the Node edge (use Host.env, or StorageConfig's Config)`)
      }
      ts.forEachChild(node, visit)
    }
    visit(file)
    return found
  })

const read = (root: string, rel: string): Source => ({ name: rel, text: Fs.readFileSync(Path.join(root, rel), "utf8") })
const tsFiles = (root: string, recursive: boolean): Array<string> =>
  (Fs.readdirSync(root, { recursive, encoding: "utf8" }) as Array<string>).filter((f) => f.endsWith(".ts")).sort()

/** The service modules (`src/services/*.ts`; `internal/` holds helpers, never services). */
const serviceSources = () => tsFiles(SERVICES, false).map((f) => read(SERVICES, f))
const allSources = () => tsFiles(SRC, true).map((f) => read(SRC, f.split(Path.sep).join("/")))

describe("one service shape", () => {
  it("every program in src/services is a Context.Tag \"pi-agent-storage/<Name>\" with static make and layer, no agentDir argument", () => {
    const sources = serviceSources()
    assert.isAtLeast(sources.flatMap((s) => tagClasses(parse(s))).length, 10, "the guard found the services")
    assert.deepStrictEqual(shapeViolations(sources), [])
  })

  it("no src/services module exports a free function taking agentDir: string beside its service", () => {
    assert.deepStrictEqual(twinViolations(serviceSources()), [])
  })

  it("process.env appears in src only at the Node edge (NodeEnv) and in work run's child hand-off", () => {
    const sources = allSources()
    assert.isAtLeast(sources.length, 50, "the guard read src/")
    assert.deepStrictEqual(envViolations(sources), [])
  })

  it("the guards bite: each flags a planted violation and lets the allowed forms through", () => {
    const service = `
      import * as Context from "effect/Context"
      export class Thing extends Context.Tag("pi-agent-storage/Thing")<Thing, { readonly go: () => void }>() {
        static readonly make = null
        static readonly layer = null
      }`
    const twin = { name: "Thing.ts", text: `${service}\nexport const go = (agentDir: string, n: number) => agentDir` }
    const twinFn = { name: "Thing.ts", text: `${service}\nexport function go(deps: unknown, agentDir: string) { return deps }` }
    const privateHelper = { name: "Thing.ts", text: `${service}\nconst go = (agentDir: string) => agentDir` }
    assert.lengthOf(twinViolations([twin]), 1)
    assert.lengthOf(twinViolations([twinFn]), 1)
    assert.deepStrictEqual(twinViolations([privateHelper]), [])
    // An alias written over the service is a twin too (no deprecated names: a 0.x library removes the old one).
    assert.lengthOf(twinViolations([{ name: "Thing.ts", text: `${service}\n/** Old name. */\nexport const go = (agentDir: string) => Thing.make` }]), 1)

    const noLayer = { name: "Bad.ts", text: service.replace("static readonly layer = null", "").replaceAll("Thing", "Bad") }
    const wrongKey = { name: "Key.ts", text: service.replace("pi-agent-storage/Thing", "Thing") }
    assert.deepStrictEqual(shapeViolations([noLayer]), ["Bad.ts: Bad has no static layer"])
    assert.lengthOf(shapeViolations([wrongKey]), 1)
    assert.deepStrictEqual(shapeViolations([{ name: "Thing.ts", text: service }]), [])
    const method = { name: "Thing.ts", text: service.replace("readonly go: () => void", "readonly go: (agentDir: string, n?: number) => void") }
    assert.deepStrictEqual(shapeViolations([method]), ["Thing.ts: Thing.go takes the agent dir as an argument; read AgentDir from the context"])

    const env = { name: "services/X.ts", text: `// process.env in a comment is fine\nconst s = "process.env"\nexport const a = process.env["HOME"]\nexport const b = process["env"]` }
    assert.deepStrictEqual(envViolations([env]).map((v) => v.split(": ")[0]), ["services/X.ts:3", "services/X.ts:4"])
    assert.deepStrictEqual(envViolations([{ name: "layers/NodeEnv.ts", text: "export const e = process.env" }]), [])
  })
})
