/**
 * What an entry of the web data root is, by its name and type: the one judgement the state snapshots' scope,
 * the config history's scan and the doctor's findings share (docs/tiers.md, docs/snapshots.md). Pure.
 */
import { misnamedWhy } from "./Segment.js"
import { WEB_RESTORE_ASIDE_DIR } from "./StateSnapshot.js"

export type WebDataEntry =
  /** A directory named by an extension id: an extension's data, its tiers inside. */
  | { readonly _tag: "Extension" }
  /** A symlink named by an extension id: an extension's data kept elsewhere (the tiers follow it). */
  | { readonly _tag: "LinkedExtension" }
  /** The library's own directory beside the data (a restore's move-aside across file systems). */
  | { readonly _tag: "LibraryDir" }
  /** A directory or symlink whose name is no extension id: nothing reads it as an extension's data. */
  | { readonly _tag: "Misnamed"; readonly why: string }
  /** Anything else (a file, a FIFO …): not data of an extension. */
  | { readonly _tag: "Other" }

export const classifyWebDataEntry = (name: string, type: string): WebDataEntry => {
  if (name === WEB_RESTORE_ASIDE_DIR) return { _tag: "LibraryDir" }
  if (type !== "Directory" && type !== "SymbolicLink") return { _tag: "Other" }
  const why = misnamedWhy(name)
  if (why !== null) return { _tag: "Misnamed", why }
  return type === "Directory" ? { _tag: "Extension" } : { _tag: "LinkedExtension" }
}
