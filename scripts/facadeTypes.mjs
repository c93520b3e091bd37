/**
 * `npm run build`, after tsc: the Promise facade's declarations as one self-contained file
 * (`dist/promise.d.ts`), written from the facade's own source by the TypeScript checker. A Promise caller
 * installs no Effect (docs/install.md "Installing"), so the declarations must name nothing of it: tsc's own output
 * imports `effect/Effect` and the Schema classes of the errors, which a strict TypeScript user without Effect
 * cannot compile. Here every type the facade exports is written out structurally, a type of this package by
 * its name (declared once in the file), and each typed error class as a plain class over `Error` with its
 * `_tag` and fields. The source stays the only description of the API: nothing here is written by hand.
 *
 * A type that can only be said through Effect (an `Effect`, a `Layer`, a Schema) is an error here: the build
 * stops and names it, so the facade never grows one unnoticed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = process.argv[2] ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const entry = path.join(root, "src", "promise.ts")
const out = path.join(root, "dist", "promise.d.ts")
const srcDir = path.join(root, "src") + path.sep

const config = ts.readConfigFile(path.join(root, "tsconfig.json"), ts.sys.readFile)
const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
const program = ts.createProgram([entry], { ...parsed.options, noEmit: true })
const checker = program.getTypeChecker()
const file = program.getSourceFile(entry)
if (file === undefined) throw new Error(`facadeTypes: cannot read ${entry}`)
const moduleSymbol = checker.getSymbolAtLocation(file)

const problems = []
/** Named declarations to write: name → text (filled as types are met). */
const declared = new Map()
/** Names being written (a type that refers to itself is written by name). */
const pending = new Set()

const isOurs = (decl) => decl !== undefined && decl !== null && path.resolve(decl.getSourceFile().fileName).startsWith(srcDir)
const isLib = (decl) => decl !== undefined && program.isSourceFileDefaultLibrary(decl.getSourceFile())
const symbolDecl = (symbol) => symbol?.declarations?.[0]

/** A property name as written: identifiers bare, well-known symbols as `[Symbol.x]`, the rest quoted. */
const propertyName = (symbol) => {
  const name = symbol.getName()
  const wellKnown = /^__@(\w+)@\d+$/.exec(name)
  if (wellKnown !== null) return `[Symbol.${wellKnown[1]}]`
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name)
}

const isOptional = (symbol) => (symbol.flags & ts.SymbolFlags.Optional) !== 0

/** An optional member's type without the `undefined` its `?` already says (`unknown` stays unknown). */
const presentType = (type) => (type.flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any) ? type : checker.getNonNullableType(type))

const typeParameters = (params, where) =>
  params === undefined || params.length === 0 ? "" : `<${params.map((p) => {
    const constraint = p.getConstraint()
    const fallback = p.getDefault()
    return `${p.symbol.getName()}${constraint ? ` extends ${print(constraint, where)}` : ""}${fallback ? ` = ${print(fallback, where)}` : ""}`
  }).join(", ")}>`

const signature = (sig, where, arrow) => {
  // Parameters as the instantiated signature has them: a rest tuple (`...args: Parameters<F>`) may come
  // expanded into plain parameters, so optionality is the signature's own count, not the syntax.
  const required = sig.minArgumentCount ?? sig.getParameters().length
  const params = sig.getParameters().map((p, i) => {
    const decl = p.valueDeclaration
    let type = checker.getTypeOfSymbol(p)
    const rest = decl !== undefined && ts.isParameter(decl) && decl.dotDotDotToken !== undefined && (checker.isArrayType(type) || checker.isTupleType(type))
    const optional = !rest && i >= required
    if (optional) type = presentType(type)
    const node = decl !== undefined && ts.isParameter(decl) && (decl.dotDotDotToken === undefined || rest) ? decl.type : undefined
    const text = printNode(node, type, `${where}(${p.getName()})`)
    return `${rest ? "..." : ""}${p.getName()}${optional ? "?" : ""}: ${text}`
  })
  const predicate = checker.getTypePredicateOfSignature(sig)
  const returnNode = sig.getDeclaration()?.type
  const ret = predicate !== undefined && predicate.type !== undefined && predicate.parameterName !== undefined
    ? `${predicate.kind === ts.TypePredicateKind.AssertsIdentifier ? "asserts " : ""}${predicate.parameterName} is ${print(predicate.type, `${where}()`)}`
    : printNode(returnNode !== undefined && !ts.isTypePredicateNode(returnNode) ? returnNode : undefined, checker.getReturnTypeOfSignature(sig), `${where}()`)
  return `${typeParameters(sig.getTypeParameters(), where)}(${params.join(", ")})${arrow ? " => " : ": "}${ret}`
}

/** A symbol's documentation comment, as a JSDoc block at `indent` (nothing when it has none). */
const docOf = (symbol, indent) => {
  const text = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim()
  if (text === "") return ""
  const lines = text.split("\n")
  return lines.length === 1 ? `${indent}/** ${lines[0]} */\n` : `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`
}

/** The members of an object type, one per line. */
const members = (type, where, indent) => {
  const lines = []
  for (const sig of type.getCallSignatures()) lines.push(signature(sig, where, false))
  for (const sig of type.getConstructSignatures()) lines.push(`new ${signature(sig, where, false)}`)
  const stringIndex = type.getStringIndexType()
  if (stringIndex) lines.push(`readonly [key: string]: ${print(stringIndex, `${where}[string]`)}`)
  for (const prop of checker.getPropertiesOfType(type)) {
    const decl = prop.valueDeclaration ?? symbolDecl(prop)
    const name = propertyName(prop)
    const propType = decl ? checker.getTypeOfSymbolAtLocation(prop, decl) : checker.getTypeOfSymbol(prop)
    const node = decl !== undefined && (ts.isPropertySignature(decl) || ts.isPropertyDeclaration(decl)) ? decl.type : undefined
    const printed = printNode(node, isOptional(prop) ? presentType(propType) : propType, `${where}.${prop.getName()}`)
    lines.push(`${docOf(prop, indent)}${indent}readonly ${name}${isOptional(prop) ? "?" : ""}: ${printed}`)
  }
  return lines.map((l) => (l.startsWith(indent) ? l : `${indent}${l}`)).join("\n")
}

/** Anonymous object types being written: meeting one again is a recursive type that has no name to say. */
const visiting = new Set()

const objectLiteral = (type, where) => {
  if (visiting.has(type) || where.length > 600) {
    problems.push(`${where.slice(0, 300)}: a recursive type without a name: ${checker.typeToString(type).slice(0, 200)}`)
    return "never"
  }
  visiting.add(type)
  try {
    return objectLiteralOnce(type, where)
  } finally {
    visiting.delete(type)
  }
}

const objectLiteralOnce = (type, where) => {
  const calls = type.getCallSignatures()
  if (calls.length === 1 && checker.getPropertiesOfType(type).length === 0 && type.getConstructSignatures().length === 0) {
    return `(${signature(calls[0], where, true)})`
  }
  const body = members(type, where, "  ")
  return body === "" ? "{}" : `{\n${body}\n}`.replace(/\n/g, "\n")
}

/**
 * Declare a type of ours once, by its name (an interface or a type alias, with its type parameters), and
 * answer the reference to it.
 */
const named = (symbol, where, args) => {
  const name = symbol.getName()
  if (!declared.has(name) && !pending.has(name)) {
    pending.add(name)
    declared.set(name, "")
    const decl = symbolDecl(symbol)
    const params = (decl?.typeParameters ?? []).map((p) => checker.getTypeAtLocation(p))
    const generic = checker.getDeclaredTypeOfSymbol(symbol)
    declared.set(name, `${docOf(symbol, "")}export type ${name}${typeParameters(params, name)} = ${structural(generic, name)}`)
    pending.delete(name)
  }
  return args && args.length > 0 ? `${name}<${args.map((a) => print(a, where)).join(", ")}>` : name
}

/**
 * A type as our source writes it, where that keeps a name the checker resolves away (`RetentionInput` is
 * `typeof RetentionInput.Type`: as a type it has no name of ours left). Only plain references to our named
 * types (and unions of them with simple types) are taken from the syntax; anything else — a generic, a
 * mapped or conditional type — is written from `type`, the checker's instantiated answer.
 */
const ourName = (node) => {
  if (!ts.isTypeReferenceNode(node) || node.typeArguments !== undefined) return undefined
  let symbol = checker.getSymbolAtLocation(node.typeName)
  if (symbol !== undefined && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol)
  return symbol !== undefined && isOurs(symbolDecl(symbol)) && symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias) ? symbol : undefined
}
const isSimpleNode = (node) =>
  ts.isLiteralTypeNode(node) || [ts.SyntaxKind.StringKeyword, ts.SyntaxKind.NumberKeyword, ts.SyntaxKind.BooleanKeyword, ts.SyntaxKind.UndefinedKeyword, ts.SyntaxKind.NullKeyword].includes(node.kind)

const printNode = (node, type, where) => {
  if (node === undefined || !isOurs(node)) return print(type, where)
  while (ts.isParenthesizedTypeNode(node)) node = node.type
  const mine = ourName(node)
  if (mine !== undefined) return mine.flags & ts.SymbolFlags.Class ? errorClassRef(mine, where) : named(mine, where, undefined)
  // A library generic over our types (`Promise<PruneReport>`, `ReadonlyArray<LogEntry>`): the same, argument by argument.
  if (ts.isTypeReferenceNode(node) && node.typeArguments !== undefined) {
    const symbol = checker.getSymbolAtLocation(node.typeName)
    const args = type.flags & ts.TypeFlags.Object && type.objectFlags & ts.ObjectFlags.Reference ? checker.getTypeArguments(type) : type.aliasTypeArguments
    const containers = ["Promise", "ReadonlyArray", "Array", "Record", "ReadonlyMap", "Map", "ReadonlySet", "Set"]
    if (symbol !== undefined && isLib(symbolDecl(symbol)) && containers.includes(symbol.getName()) && args !== undefined && args.length === node.typeArguments.length) {
      const name = symbol.getName() === "Array" ? "ReadonlyArray" : symbol.getName()
      return `${name}<${node.typeArguments.map((a, i) => printNode(a, args[i], where)).join(", ")}>`
    }
  }
  if (ts.isUnionTypeNode(node) && node.types.every((t) => ourName(t) !== undefined || isSimpleNode(t)) && node.types.some((t) => ourName(t) !== undefined)) {
    return node.types.map((t) => (ourName(t) !== undefined ? printNode(t, type, where) : print(checker.getTypeFromTypeNode(t), where))).join(" | ")
  }
  return print(type, where)
}

/** A type written out, not by its name. */
const structural = (type, where) => {
  if (type.isUnion()) return unionText(type, where)
  if (type.isIntersection()) return type.types.map((t) => print(t, where)).join(" & ")
  return objectLiteral(type, where)
}

const unionText = (type, where) => {
  const parts = type.types.map((t) => print(t, where))
  const set = new Set(parts)
  if (set.has("true") && set.has("false")) {
    set.delete("true")
    set.delete("false")
    set.add("boolean")
  }
  return [...set].join(" | ")
}

/** A tuple with its labels, optional and rest elements (a function's parameters, as `Parameters<F>` gives them). */
const tupleText = (type, where) => {
  const target = type.target
  const elements = checker.getTypeArguments(type).slice(0, target.elementFlags.length).map((t, i) => {
    const flags = target.elementFlags[i]
    const label = target.labeledElementDeclarations?.[i]?.name?.getText()
    const optional = (flags & ts.ElementFlags.Optional) !== 0
    const rest = (flags & ts.ElementFlags.Variable) !== 0
    const text = print(optional ? presentType(t) : t, where)
    if (label !== undefined) return `${rest ? "..." : ""}${label}${optional ? "?" : ""}: ${rest ? `ReadonlyArray<${text}>` : text}`
    return rest ? `...ReadonlyArray<${text}>` : `${text}${optional ? "?" : ""}`
  })
  return `readonly [${elements.join(", ")}]`
}

/** Our named error classes met as types (instances), written once as classes. */
const errorClasses = new Map()

const print = (type, where) => {
  const flags = type.flags
  if (flags & ts.TypeFlags.Any) return "any"
  if (flags & ts.TypeFlags.Unknown) return "unknown"
  if (flags & ts.TypeFlags.Never) return "never"
  if (flags & ts.TypeFlags.Void) return "void"
  if (flags & ts.TypeFlags.Undefined) return "undefined"
  if (flags & ts.TypeFlags.Null) return "null"
  if (flags & (ts.TypeFlags.String | ts.TypeFlags.Number | ts.TypeFlags.Boolean | ts.TypeFlags.BigInt | ts.TypeFlags.ESSymbol)) return checker.typeToString(type)
  if (flags & (ts.TypeFlags.StringLiteral | ts.TypeFlags.NumberLiteral | ts.TypeFlags.BooleanLiteral | ts.TypeFlags.BigIntLiteral)) return checker.typeToString(type)
  if (flags & ts.TypeFlags.UniqueESSymbol) return "symbol"
  if (flags & ts.TypeFlags.TypeParameter) return type.symbol.getName()
  if (flags & ts.TypeFlags.TemplateLiteral) return checker.typeToString(type)
  if (checker.isTupleType(type)) return tupleText(type, where)
  const alias = type.aliasSymbol
  if (alias && isOurs(symbolDecl(alias))) return named(alias, where, type.aliasTypeArguments)
  if (type.isUnion()) return unionText(type, where)
  if (type.isIntersection()) return type.types.map((t) => print(t, where)).join(" & ")
  if (checker.isArrayType(type)) return `ReadonlyArray<${print(checker.getTypeArguments(type)[0], where)}>`
  const symbol = type.getSymbol()
  const decl = symbolDecl(symbol)
  if (symbol && isLib(decl)) {
    const args = type.aliasTypeArguments ?? (type.target ? checker.getTypeArguments(type) : [])
    const name = alias && isLib(symbolDecl(alias)) ? alias.getName() : symbol.getName()
    if (name === "ReadonlyArray" || name === "Array") return `ReadonlyArray<${print(args[0], where)}>`
    if (name === "__type" || name === "__object") return objectLiteral(type, where)
    return args.length > 0 ? `${name}<${args.map((a) => print(a, where)).join(", ")}>` : name
  }
  if (symbol && isOurs(decl)) {
    if (symbol.flags & ts.SymbolFlags.Class) return errorClassRef(symbol, where)
    if (symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) {
      return named(symbol, where, type.target ? checker.getTypeArguments(type).slice(0, type.target.typeParameters?.length ?? 0) : undefined)
    }
    return objectLiteral(type, where)
  }
  if (symbol && decl && !isOurs(decl) && !isLib(decl)) {
    // A type of a dependency: written out when it is plain data (a Schema-derived struct), refused when it is
    // an Effect program, layer or schema (a Promise caller cannot use one).
    const file = decl.getSourceFile().fileName
    if (symbol.flags & ts.SymbolFlags.Class || /Effect|Layer|Schema\b|Scope|Stream|Context/.test(symbol.getName())) {
      problems.push(`${where}: ${checker.typeToString(type)} (from ${path.relative(root, file)})`)
      return "never"
    }
  }
  if (flags & ts.TypeFlags.Object) return objectLiteral(type, where)
  problems.push(`${where}: cannot write ${checker.typeToString(type)}`)
  return "never"
}

/** A typed error class of ours: a plain class over `Error` with its `_tag` and fields. */
const errorClassRef = (symbol, where) => {
  const name = symbol.getName()
  if (!errorClasses.has(name)) {
    errorClasses.set(name, "")
    const ctor = checker.getTypeOfSymbol(symbol)
    const instance = checker.getDeclaredTypeOfSymbol(symbol)
    const tag = checker.getPropertyOfType(instance, "_tag")
    const sig = ctor.getConstructSignatures()[0]
    if (tag === undefined || sig === undefined) {
      problems.push(`${where}: class ${name} is not a typed error (no _tag)`)
      return "never"
    }
    const fieldsParam = sig.getParameters()[0]
    const fields = fieldsParam ? checker.getTypeOfSymbol(fieldsParam) : undefined
    const fieldLines = fields ? members(fields, name, "  ") : ""
    const tagText = print(checker.getTypeOfSymbol(tag), `${name}._tag`)
    errorClasses.set(name, [
      docOf(symbol, "").trimEnd(),
      `export declare class ${name} extends Error {`,
      `  constructor(fields${fields && checker.getPropertiesOfType(fields).length === 0 ? "?" : ""}: ${fields ? objectLiteral(fields, name).replace(/\n/g, "\n  ") : "{}"})`,
      `  readonly _tag: ${tagText}`,
      fieldLines,
      "}"
    ].filter((l) => l !== "").join("\n"))
  }
  return name
}

const lines = []
/** Whether a value's type is one of Effect's Schemas (it has Effect's `ast` and `annotations`). */
const isEffectSchema = (type) => {
  const ast = checker.getPropertyOfType(type, "ast")
  const decl = ast && symbolDecl(ast)
  return decl !== undefined && !isOurs(decl) && /[\\/]effect[\\/]/.test(decl.getSourceFile().fileName)
}

/** `export type { X }` (or `export { type X }`): only the type meaning of X is exported. */
const typeOnly = (exported) => {
  const decl = exported.declarations?.[0]
  return decl !== undefined && ts.isExportSpecifier(decl) && (decl.isTypeOnly || decl.parent.parent.isTypeOnly)
}

for (const exported of checker.getExportsOfModule(moduleSymbol)) {
  const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
  const name = exported.getName()
  if (typeOnly(exported)) {
    if (symbol.flags & ts.SymbolFlags.Class) errorClassRef(symbol, name)
    else if (isOurs(symbolDecl(symbol)) && symbol.getName() === name) named(symbol, name, undefined)
    else lines.push(`export type ${name} = ${print(checker.getDeclaredTypeOfSymbol(symbol), name)}`)
    continue
  }
  if (symbol.flags & ts.SymbolFlags.Class) {
    const written = errorClassRef(symbol, name)
    if (written !== name) continue
    if (name !== symbol.getName()) lines.push(`export { ${symbol.getName()} as ${name} }`)
    continue
  }
  if (symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) {
    const type = checker.getDeclaredTypeOfSymbol(symbol)
    if (symbol.getName() === name && isOurs(symbolDecl(symbol))) {
      named(symbol, name, undefined)
    } else {
      lines.push(`export type ${name} = ${print(type, name)}`)
    }
  }
  if (symbol.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Variable)) {
    const type = checker.getTypeOfSymbol(symbol)
    // A Schema re-exported beside its type (`export *` of a domain module): a Promise caller gets the type only.
    if (symbol.flags & ts.SymbolFlags.TypeAlias && isEffectSchema(type)) continue
    lines.push(`${docOf(symbol, "")}export declare const ${name}: ${print(type, name)}`)
  }
}

if (problems.length > 0) {
  process.stderr.write(`facadeTypes: the Promise facade exposes types a caller without Effect cannot name:\n${problems.map((p) => `  ${p}`).join("\n")}\n`)
  process.exit(1)
}

const header = "/** pi-agent-storage/promise: the Promise facade's declarations, self-contained (scripts/facadeTypes.mjs writes them from src/promise.ts). */\n"
const body = [...errorClasses.values(), ...declared.values(), ...lines].join("\n\n")
// Laid out by TypeScript's own printer (comments kept), so nested types read as a person would write them.
const draft = ts.createSourceFile("promise.d.ts", `${header}\n${body}\n`, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
const syntax = draft.parseDiagnostics ?? []
if (syntax.length > 0) {
  process.stderr.write(`facadeTypes: wrote unparsable declarations: ${syntax.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n")).join("; ")}\n`)
  process.exit(1)
}
fs.writeFileSync(out, ts.createPrinter({ newLine: ts.NewLineKind.LineFeed }).printFile(draft))
