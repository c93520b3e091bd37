/**
 * The doctor's view of unreadable markers and leases and far-future timestamps (docs/safety.md "How runs stay safe": stale unreadable markers and leases):
 * for each, what it is and what the next prune will do, from the same judgements the pruner acts on.
 */
import type { FindingDraft } from "../../domain/FindingDraft.js"
import type { BoundedManifestTimes } from "../../domain/PrunePlan.js"
import type { MarkerJudgement } from "./markers.js"
import type { LeaseEntry } from "./runFacts.js"

const minutes = (ms: number) => `${Math.round(ms / 60_000)} min`

/**
 * A marker that is unreadable or squatted (a directory, a symlink); `undefined` for a readable one.
 * `nonEmptyDirectory`: the squatting directory holds entries (then it is never deleted).
 */
export const markerFinding = (
  path: string,
  judged: MarkerJudgement,
  what: "prune marker" | "cleanup marker",
  staleMs: number,
  nonEmptyDirectory: boolean
): FindingDraft | undefined => {
  if (!judged.unreadable) return undefined
  const blocks = what === "prune marker" ? "no prune of this tenant runs" : "this run is never pruned"
  if (judged.type === "Directory" || judged.type === "SymbolicLink") {
    const it = judged.type === "Directory" ? "a directory" : "a symlink"
    const message = `${it} where the ${what} file belongs (not a running prune): ${judged.detail}`
    if (nonEmptyDirectory) {
      return { code: "work-squatted-marker", path, message, fix: `never deleted (it holds entries, it cannot be proven ours) and ${blocks} until it is moved away by hand` }
    }
    const removal = judged.type === "Directory" ? "removes the empty directory (rmdir)" : "unlinks the link (its target is never touched)"
    return {
      code: "work-squatted-marker",
      path,
      message,
      fix: judged.alive
        ? `the first prune after it is ${minutes(staleMs)} old ${removal}`
        : `the next prune of this tenant ${removal}`
    }
  }
  return {
    code: "work-unreadable-marker",
    path,
    message: `unreadable ${what}: ${judged.detail}`,
    fix: judged.alive
      ? `held until it is ${minutes(staleMs)} old (its writer may still be writing it); then the next prune reclaims it`
      : "the next prune of this tenant reclaims it"
  }
}

/** An unreadable lease, or one with a far-future heartbeat; `undefined` otherwise. */
export const leaseFinding = (lease: LeaseEntry, staleMs: number): FindingDraft | undefined => {
  if (lease.verdict.unreadable !== true) return undefined
  const future = !("unreadable" in lease.facts)
  const fix = lease.verdict.alive
    ? future
      ? "its stamp is ignored: held (the run is kept) while its file is written within the remote lease TTL, as any other host's lease"
      : `held (the run is kept) until the file is ${minutes(staleMs)} old; then the next prune removes it`
    : "dead: the next prune of this tenant removes it (with its run, or alone)"
  return { code: future ? "work-future-timestamp" : "work-unreadable-lease", path: lease.path, message: lease.verdict.detail, fix }
}

/** Far-future stamps of the manifest at `manifestPath`, set aside for last use. */
export const manifestTimeFindings = (manifestPath: string, times: BoundedManifestTimes): ReadonlyArray<FindingDraft> =>
  times.farFuture.map((message) => ({
    code: "work-future-timestamp" as const,
    path: manifestPath,
    message,
    fix: "the prune ages the run from the manifest's mtime (capped at now); rewrite or delete the manifest if it is wrong"
  }))
