/**
 * The USER.md profile as a model (docs/user-profile.md "User profile (USER.md)"), pure: what the files on disk mean (every fact once, in order),
 * what a mutation does to it, and which files a new layout needs written or removed.
 *
 * The identity rule: a shard is named after its body, so a layout is a function of the facts alone; a shard
 * that did not change keeps its file (and its name, even one Pi chose), a changed one gets a new file and
 * the old one goes only after the new layout is committed.
 *
 * Convergence: the model is the union of every readable shard (those the index lists in its order, then any
 * it does not list, oldest first) and the hot entries, each fact kept at its first occurrence. Whatever a
 * crash (or Pi) left doubled is seen once, and the next layout written from the model holds it once.
 */
import * as Either from "effect/Either"
import { entryId, type ProfileJournal, type ShardDocument, shardName, splitIntoShards } from "./UserProfileArchive.js"
import type { AmbiguousEntry, EntryNotFound, InvalidEntry } from "./UserProfileErrors.js"
import { fitsBudget, matchEntry, parseEntry, parseUserText, renderUserText, type UserText } from "./UserProfileText.js"
import type { UnparsableShard } from "./ReportProblems.js"

/** What was read from disk (by the service), before any interpretation. */
export interface ProfileFiles {
  /** USER.md, `null` when missing. */
  readonly user: string | null
  /** The shards the index lists, `null` when the index is missing or does not parse. */
  readonly indexed: ReadonlyArray<string> | null
  /** Whether an index file exists (even one that does not parse). */
  readonly indexExists: boolean
  /** Every readable shard in the archive directory, by file name. */
  readonly shards: ReadonlyMap<string, ShardDocument>
  /** Shard files that do not parse: reported, never read as empty, never written or removed. */
  /** Shard files that do not parse or are too large to read (`ShardUnparsable`, `ShardTooLarge`). */
  readonly unparsable: ReadonlyArray<UnparsableShard>
}

export interface ProfileSegment {
  /** The shard file the entries are in, `null` for entries not yet in any file. */
  readonly origin: string | null
  readonly entries: ReadonlyArray<string>
  /** Entries were changed, removed or dropped as duplicates: the shard needs a new file. */
  readonly dirty: boolean
}

export interface ProfileModel {
  readonly archive: ReadonlyArray<ProfileSegment>
  readonly hot: ReadonlyArray<string>
  /** USER.md had Pi's pointer. */
  readonly pointer: boolean
  /** The shard order the model read (index order, then unlisted shards): compared with a new layout's index. */
  readonly order: ReadonlyArray<string>
  /** Shards present that the index does not list (adopted into the model). */
  readonly unlisted: ReadonlyArray<string>
  /** Shards the index lists that are not there. */
  readonly missing: ReadonlyArray<string>
}

const byAge = (shards: ReadonlyMap<string, ShardDocument>) => (a: string, b: string): number => {
  const ta = shards.get(a)?.timestamp ?? ""
  const tb = shards.get(b)?.timestamp ?? ""
  return ta < tb ? -1 : ta > tb ? 1 : a < b ? -1 : a > b ? 1 : 0
}

/** The files as one model: every fact once, archived ones first. */
export const buildModel = (files: ProfileFiles): ProfileModel => {
  const indexed = files.indexed ?? []
  const listed = indexed.filter((n) => files.shards.has(n))
  const unlisted = [...files.shards.keys()].filter((n) => !indexed.includes(n)).sort(byAge(files.shards))
  const order = [...listed, ...unlisted]
  const seen = new Set<string>()
  const keepFirst = (entries: ReadonlyArray<string>) => {
    const kept = entries.filter((e) => !seen.has(e) && (seen.add(e), true))
    return { kept, dropped: kept.length !== entries.length }
  }
  const archive = order.map((origin): ProfileSegment => {
    const { kept, dropped } = keepFirst(files.shards.get(origin)!.entries)
    return { origin, entries: kept, dirty: dropped }
  })
  const user = parseUserText(files.user ?? "")
  return {
    archive,
    hot: keepFirst(user.entries).kept,
    pointer: user.pointer,
    order,
    unlisted,
    missing: indexed.filter((n) => !files.shards.has(n))
  }
}

export interface ProfileEntry {
  readonly id: string
  readonly text: string
  /** The shard file holding it, `null` for a hot entry (in USER.md). */
  readonly shard: string | null
}

export const modelEntries = (model: ProfileModel): Array<ProfileEntry> => [
  ...model.archive.flatMap((s) => s.entries.map((text) => ({ id: entryId(text), text, shard: s.origin })) as Array<ProfileEntry>),
  ...model.hot.map((text) => ({ id: entryId(text), text, shard: null }))
]

export type ProfileOperation =
  | { readonly _tag: "Add"; readonly text: string }
  | { readonly _tag: "Replace"; readonly query: string; readonly text: string }
  | { readonly _tag: "Remove"; readonly query: string }

export type MutationOutcome = "added" | "duplicate" | "replaced" | "unchanged" | "removed"

export interface Applied {
  readonly model: ProfileModel
  readonly outcome: MutationOutcome
  /** The entry added, or the new text of a replace, or the entry removed. */
  readonly entry: string
  /** The entry a replace or remove matched. */
  readonly matched?: string
}

type Location = { readonly segment: number | "hot"; readonly at: number }

const locations = (model: ProfileModel): Array<Location & { readonly text: string }> => [
  ...model.archive.flatMap((s, segment) => s.entries.map((text, at) => ({ segment, at, text }))),
  ...model.hot.map((text, at) => ({ segment: "hot" as const, at, text }))
]

/** Replace the entry at `loc` with `replacement` (none: remove it). */
const edit = (model: ProfileModel, loc: Location, replacement: ReadonlyArray<string>): ProfileModel => {
  const splice = (entries: ReadonlyArray<string>) => [...entries.slice(0, loc.at), ...replacement, ...entries.slice(loc.at + 1)]
  if (loc.segment === "hot") return { ...model, hot: splice(model.hot) }
  return { ...model, archive: model.archive.map((s, i) => (i === loc.segment ? { ...s, entries: splice(s.entries), dirty: true } : s)) }
}

/** A mutation on the model: a duplicate add and a replace by the same text change nothing and say so. */
export const applyOperation = (
  model: ProfileModel,
  op: ProfileOperation,
  maxEntryBytes: number
): Either.Either<Applied, InvalidEntry | EntryNotFound | AmbiguousEntry> =>
  Either.gen(function*() {
    const all = locations(model)
    const texts = all.map((l) => l.text)
    if (op._tag === "Add") {
      const text = yield* parseEntry(op.text, maxEntryBytes)
      if (texts.includes(text)) return { model, outcome: "duplicate", entry: text } as Applied
      return { model: { ...model, hot: [...model.hot, text] }, outcome: "added", entry: text } as Applied
    }
    const replacement = op._tag === "Replace" ? yield* parseEntry(op.text, maxEntryBytes) : undefined
    const loc = all[yield* matchEntry(texts, op.query)]!
    if (replacement === undefined) return { model: edit(model, loc, []), outcome: "removed", entry: loc.text, matched: loc.text } as Applied
    if (replacement === loc.text) return { model, outcome: "unchanged", entry: replacement, matched: loc.text } as Applied
    // The new text is already another entry: the fact is then held once, by that entry.
    const next = texts.includes(replacement) ? edit(model, loc, []) : edit(model, loc, [replacement])
    return { model: next, outcome: "replaced", entry: replacement, matched: loc.text } as Applied
  })

export interface ProfileLayoutShard {
  readonly name: string
  readonly entries: ReadonlyArray<string>
}

export interface ProfileLayout {
  readonly shards: ReadonlyArray<ProfileLayoutShard>
  readonly user: UserText
  /** The hot body went into new shards (the budget would have been exceeded). */
  readonly archivedHot: boolean
}

export interface ProfileLayoutOptions {
  readonly budgetBytes: number
  readonly shardBudgetBytes: number
}

/**
 * The files a model is written as. Unchanged shards keep their files; a changed one is re-split under the
 * shard budget; empty ones vanish. When USER.md would exceed its budget, the whole hot body moves into new
 * shards at the end of the archive and USER.md becomes Pi's pointer alone.
 */
export const planLayout = (model: ProfileModel, options: ProfileLayoutOptions): ProfileLayout => {
  const chunked = (entries: ReadonlyArray<string>): Array<ProfileLayoutShard> =>
    splitIntoShards(entries, options.shardBudgetBytes).map((chunk) => ({ name: shardName(chunk), entries: chunk }))
  const shards = model.archive.flatMap((s): Array<ProfileLayoutShard> => {
    if (s.entries.length === 0) return []
    if (!s.dirty && s.origin !== null) return [{ name: s.origin, entries: s.entries }]
    return chunked(s.entries)
  })
  const user: UserText = { pointer: shards.length > 0, entries: model.hot }
  if (fitsBudget(user, options.budgetBytes) || model.hot.length === 0) return { shards, user, archivedHot: false }
  return { shards: [...shards, ...chunked(model.hot)], user: { pointer: true, entries: [] }, archivedHot: true }
}

export interface ProfileWrites {
  /** Shards to write (not on disk yet), in layout order. */
  readonly create: ReadonlyArray<ProfileLayoutShard>
  /** The new index (shard names in order); `[]` removes the index; `null` leaves it. */
  readonly index: ReadonlyArray<string> | null
  /** The new USER.md; `null` leaves it. */
  readonly user: string | null
  /** Shards the layout no longer has, removed after the layout is committed. */
  readonly obsolete: ReadonlyArray<string>
}

const sameList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x, i) => x === b[i])

/** What turns the files into the layout; nothing when they already are it. */
export const diffLayout = (files: ProfileFiles, layout: ProfileLayout): ProfileWrites => {
  const names = layout.shards.map((s) => s.name)
  const userText = renderUserText(layout.user)
  const indexUpToDate = names.length === 0 ? !files.indexExists : files.indexed !== null && sameList(files.indexed, names)
  return {
    create: layout.shards.filter((s) => !files.shards.has(s.name)),
    index: indexUpToDate ? null : names,
    // A missing USER.md of an empty profile stays missing.
    user: userText === (files.user ?? "") ? null : userText,
    obsolete: [...files.shards.keys()].filter((n) => !names.includes(n))
  }
}

export const isNoop = (w: ProfileWrites): boolean =>
  w.create.length === 0 && w.index === null && w.user === null && w.obsolete.length === 0

/** More than one file changes: the writes go through the journal (one atomic USER.md or index write needs none). */
export const needsJournal = (w: ProfileWrites): boolean =>
  w.create.length + w.obsolete.length + (w.index === null ? 0 : 1) + (w.user === null ? 0 : 1) > 1

/** SHA-256 of the profile's files as they are on disk (`null`: missing), to compare with a journal's `read`. */
export interface ProfileDigests {
  readonly user: string | null
  readonly index: string | null
  readonly shards: ReadonlyMap<string, string>
}

export const journalOf = (w: ProfileWrites, layout: ProfileLayout, read: ProfileDigests): ProfileJournal => ({
  version: 1,
  shards: layout.shards.map((s) => s.name),
  created: w.create.map((s) => s.name),
  obsolete: w.obsolete,
  user: w.user,
  read: {
    user: read.user,
    index: read.index,
    obsolete: Object.fromEntries(w.obsolete.flatMap((n) => {
      const digest = read.shards.get(n)
      return digest === undefined ? [] : [[n, digest] as const]
    }))
  }
})

/**
 * A crash left `journal`: finish it when every shard it creates is on disk with the body its name says
 * (the index may already list them), else undo it (the index was not written yet: it follows the shards).
 */
export const journalDirection = (journal: ProfileJournal, files: ProfileFiles): "forward" | "back" =>
  journal.created.every((n) => {
    const shard = files.shards.get(n)
    return shard !== undefined && shardName(shard.entries) === n
  })
    ? "forward"
    : "back"

/** What finishing or undoing a journal writes, and which files it leaves alone because a person changed them. */
export interface RecoveryPlan {
  readonly direction: "forward" | "back"
  /** The index becomes the journal's (its `shards`; none: the index is removed); `false`: it is left as it is. */
  readonly index: boolean
  /** The new USER.md; `null` leaves it. */
  readonly user: string | null
  /** Shard files removed. */
  readonly remove: ReadonlyArray<string>
  /** Files changed since the journal's writer read them ("USER.md", "index" or a shard name): never replaced. */
  readonly kept: ReadonlyArray<string>
}

/**
 * Finish or undo `journal` over the files as they are (`now`: their digests). Forward, each remaining write is
 * made only while its file is still what the journal's writer read (DESIGN "Safety rules"): a USER.md, index
 * or obsolete shard a person changed since is kept as it is. That converges: the model keeps every fact once
 * whatever is left doubled, adopts shards the index does not list, and the next mutation writes it all anew.
 */
export const recoveryPlan = (journal: ProfileJournal, files: ProfileFiles, now: ProfileDigests): RecoveryPlan => {
  if (journalDirection(journal, files) === "back") return { direction: "back", index: false, user: null, remove: ownedCreated(journal, files), kept: [] }
  const read = journal.read
  const kept: Array<string> = []
  const indexDone = journal.shards.length === 0 ? !files.indexExists : files.indexed !== null && sameList(files.indexed, journal.shards)
  const indexFree = read === undefined || now.index === read.index
  if (!indexDone && !indexFree) kept.push("index")
  const userWanted = journal.user !== null && journal.user !== (files.user ?? "")
  const userFree = read === undefined || now.user === read.user
  if (userWanted && !userFree) kept.push("USER.md")
  const user = userWanted && userFree ? journal.user : null
  const unchanged: Array<string> = []
  for (const name of journal.obsolete) {
    if (!files.shards.has(name)) continue
    if (read === undefined || now.shards.get(name) === read.obsolete[name]) unchanged.push(name)
    else kept.push(name)
  }
  // A journal without the digests of what its writer read (an older one, or one written by hand) cannot show that
  // an obsolete shard is the one its edit meant to replace: that shard goes only when every fact it holds is still
  // in the profile without it, and is kept otherwise. (With the digests, the edit's own removals go as planned.)
  const going = new Set(unchanged)
  const staying = new Set(parseUserText(user ?? files.user ?? "").entries)
  for (const [name, shard] of files.shards) if (!going.has(name)) for (const entry of shard.entries) staying.add(entry)
  const remove = read !== undefined ? unchanged : unchanged.filter((name) => files.shards.get(name)!.entries.every((entry) => staying.has(entry)))
  for (const name of unchanged) if (!remove.includes(name)) kept.push(name)
  return { direction: "forward", index: !indexDone && indexFree, user, remove, kept }
}

/** The files as they are once `journal` is finished or undone (for a reader who may not write). */
export const filesAfterJournal = (files: ProfileFiles, journal: ProfileJournal, now: ProfileDigests): ProfileFiles => {
  const plan = recoveryPlan(journal, files, now)
  const dropped = new Set(plan.remove)
  const shards = new Map([...files.shards].filter(([n]) => !dropped.has(n)))
  return {
    ...files,
    shards,
    user: plan.user ?? files.user,
    ...(plan.index ? { indexed: journal.shards, indexExists: journal.shards.length > 0 } : {})
  }
}

/** The created shards of `journal` that are on disk with the body their name says (so they are ours to undo). */
export const ownedCreated = (journal: ProfileJournal, files: ProfileFiles): Array<string> =>
  journal.created.filter((n) => {
    const shard = files.shards.get(n)
    return shard !== undefined && shardName(shard.entries) === n
  })
