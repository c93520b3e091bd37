/**
 * Our own `--help`, generated from the `@effect/cli` command tree: `@effect/cli`'s help is 100+
 * lines of "A user-defined piece of text." and "This setting is optional." and names a subcommand `$ prune`.
 * This reads each command's name, description, arguments and flags from the tree's descriptors and prints a
 * page that names the command in full (`pi-storage work prune`), lists every flag with its description
 * (booleans get "Default: off." when the description does not say), and its subcommands. Any command added
 * to the tree gets this help without doing anything; what it should show is written in its descriptions:
 * `Command.withDescription` (first line: the summary shown in lists; more lines, such as `Example: …`, on
 * its own page), `Options.withDescription` and `Args.withDescription` (say the default and give one
 * example), `Options.withPseudoName` (the value's placeholder, else `VALUE`). Every page ends with the
 * exit-code table of exitCodes.ts.
 *
 * The descriptors are `@effect/cli` internals (`_tag`ged instructions, @effect/cli 0.77.2); an unknown node
 * contributes nothing to the page (test/cli/newUser.test.ts checks every page, so a change shows there).
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Option from "effect/Option"
import { EXIT_CODE_TABLE } from "./exitCodes.js"
import { stripAnsi } from "./format.js"

export interface HelpFlag {
  readonly names: ReadonlyArray<string>
  readonly placeholder: string | undefined
  readonly description: string
}

export interface HelpArg {
  readonly name: string
  readonly optional: boolean
  readonly repeated: boolean
  readonly description: string
  /** How many values it takes: at least `min`, at most `max` (`Infinity`: any number). */
  readonly min: number
  readonly max: number
}

export interface HelpNode {
  readonly name: string
  readonly description: string
  readonly flags: ReadonlyArray<HelpFlag>
  readonly args: ReadonlyArray<HelpArg>
  readonly children: ReadonlyArray<HelpNode>
}

type Instruction = { readonly _tag?: string; readonly [key: string]: unknown }

const docText = (doc: unknown): string =>
  doc === undefined || doc === null ? "" : stripAnsi(HelpDoc.toAnsiText(doc as HelpDoc.HelpDoc)).trim()

const flagsOf = (o: Instruction | undefined, defaultValue?: { readonly value: unknown }): Array<HelpFlag> => {
  switch (o?._tag) {
    case "Single": {
      const primitive = o["primitiveType"] as Instruction | undefined
      const isBool = primitive?._tag === "Bool"
      let description = docText(o["description"])
      if (isBool && defaultValue?.value === false && !/default/i.test(description)) description = `${description} Default: off.`.trim()
      const pseudo = o["pseudoName"] as Option.Option<string> | undefined
      const aliases = (o["aliases"] as ReadonlyArray<string> | undefined) ?? []
      return [{
        names: [...aliases.map((a) => (a.length === 1 ? `-${a}` : `--${a}`)), String(o["fullName"])],
        placeholder: isBool ? undefined : pseudo !== undefined && Option.isOption(pseudo) && Option.isSome(pseudo) ? pseudo.value : "VALUE",
        description
      }]
    }
    case "Map":
    case "WithFallback":
      return flagsOf(o["options"] as Instruction, defaultValue)
    case "WithDefault":
      return flagsOf(o["options"] as Instruction, { value: o["fallback"] })
    case "Both":
    case "OrElse":
      return [...flagsOf(o["left"] as Instruction), ...flagsOf(o["right"] as Instruction)]
    case "Variadic":
    case "KeyValueMap":
      return flagsOf(o["argumentOption"] as Instruction)
    default:
      return []
  }
}

const optionalNumber = (o: unknown): number | undefined => (o !== undefined && Option.isOption(o) && Option.isSome(o) ? Number(o.value) : undefined)

const argsOf = (a: Instruction | undefined, optional = false, repeated = false, count = { min: 1, max: 1 }): Array<HelpArg> => {
  switch (a?._tag) {
    case "Single": {
      const pseudo = a["pseudoName"] as Option.Option<string> | undefined
      const name = pseudo !== undefined && Option.isOption(pseudo) && Option.isSome(pseudo) ? pseudo.value : String(a["name"]).replace(/^<|>$/g, "").toUpperCase()
      return [{ name, optional, repeated, description: docText(a["description"]), min: optional ? 0 : count.min, max: count.max }]
    }
    case "Map":
    case "WithFallbackConfig":
      return argsOf(a["args"] as Instruction, optional, repeated, count)
    case "WithDefault":
      return argsOf(a["args"] as Instruction, true, repeated, count)
    case "Variadic": {
      const min = optionalNumber(a["min"]) ?? 0
      const max = optionalNumber(a["max"]) ?? Infinity
      return argsOf(a["args"] as Instruction, optional || min === 0, true, { min: count.min * min, max: count.max * max })
    }
    case "Both":
      return [...argsOf(a["left"] as Instruction, optional, repeated, count), ...argsOf(a["right"] as Instruction, optional, repeated, count)]
    default:
      return []
  }
}

const nodeOf = (d: Instruction | undefined): HelpNode | undefined => {
  switch (d?._tag) {
    case "Standard":
    case "GetUserInput":
      return {
        name: String(d["name"]),
        description: docText(d["description"]),
        flags: flagsOf(d["options"] as Instruction),
        args: argsOf(d["args"] as Instruction),
        children: []
      }
    case "Map":
      return nodeOf(d["command"] as Instruction)
    case "Subcommands": {
      const parent = nodeOf(d["parent"] as Instruction)
      if (parent === undefined) return undefined
      const children = ((d["children"] as ReadonlyArray<Instruction> | undefined) ?? []).map(nodeOf).filter((n): n is HelpNode => n !== undefined)
      return { ...parent, children }
    }
    default:
      return undefined
  }
}

/** The help tree of a command (`Command.make(...)` with its subcommands). */
export const helpTree = (command: { readonly descriptor?: unknown }): HelpNode | undefined => nodeOf(command.descriptor as Instruction)

/** The node a command line names (leading words that are subcommands) and the path to it. */
export const findCommand = (root: HelpNode, args: ReadonlyArray<string>): { readonly node: HelpNode; readonly path: ReadonlyArray<string> } => {
  let node = root
  const path: Array<string> = []
  for (const word of args) {
    if (word.startsWith("-")) continue
    const child = node.children.find((c) => c.name === word)
    if (child === undefined) break
    node = child
    path.push(word)
  }
  return { node, path }
}

const summaryOf = (description: string): string => description.split("\n")[0] ?? ""

const columns = (rows: ReadonlyArray<readonly [string, string]>): string => {
  const width = Math.min(28, Math.max(...rows.map(([left]) => left.length)))
  return rows.map(([left, right]) => (left.length > width ? `  ${left}\n  ${" ".repeat(width)}  ${right}` : `  ${left.padEnd(width)}  ${right}`).trimEnd()).join("\n")
}

const argUsage = (a: HelpArg): string => {
  const name = a.repeated ? `${a.name}...` : a.name
  return a.optional ? `[${name}]` : name
}

const flagLabel = (f: HelpFlag): string => f.names.join(", ") + (f.placeholder === undefined ? "" : ` ${f.placeholder}`)

export interface HelpPage {
  /** The program name (`pi-storage`). */
  readonly program: string
  /** Flags every command accepts, shown on every page. */
  readonly globalFlags: ReadonlyArray<readonly [string, string]>
}

/** The help page of `node`, reached by `path` (empty: the program's own page). */
export const renderHelp = (page: HelpPage, node: HelpNode, path: ReadonlyArray<string>): string => {
  const full = [page.program, ...path].join(" ")
  const parts: Array<string> = []
  if (node.children.length > 0 && node.flags.length === 0 && node.args.length === 0) {
    parts.push(`usage: ${full} <command> [flags]`)
  } else {
    parts.push(`usage: ${[full, ...node.args.map(argUsage), node.flags.length > 0 ? "[flags]" : ""].filter((s) => s !== "").join(" ")}`)
  }
  if (node.description !== "") parts.push(node.description)
  if (node.children.length > 0) {
    const rows: Array<readonly [string, string]> = []
    for (const child of node.children) {
      if (child.children.length === 0) rows.push([child.name, summaryOf(child.description)])
      else for (const grand of child.children) rows.push([`${child.name} ${grand.name}`, summaryOf(grand.description)])
    }
    parts.push(`Commands:\n${columns(rows)}`)
  }
  const described = node.args.filter((a) => a.description !== "")
  if (described.length > 0) parts.push(`Arguments:\n${columns(described.map((a) => [a.name, a.description] as const))}`)
  if (node.flags.length > 0) parts.push(`Flags:\n${columns(node.flags.map((f) => [flagLabel(f), f.description] as const))}`)
  parts.push(`${path.length === 0 ? "Global flags" : "Global flags (any command)"}:\n${columns(page.globalFlags)}`)
  if (node.children.length > 0) parts.push(`Run '${full} <command> --help' for a command's flags.`)
  parts.push(`Exit codes:\n${columns(EXIT_CODE_TABLE)}`)
  return parts.join("\n\n") + "\n"
}
