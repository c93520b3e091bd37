/**
 * The doctor's look at the USER.md profile (docs/migrations.md "Doctor", "User profile (USER.md)"): read-only, with the same reader the profile
 * writes with. Findings: USER.md over the default budget, a pointer whose index is missing, shards the
 * index does not list, shards that cannot be read (front matter that does not parse or breaks the decoder's
 * limits, not UTF-8, too large), a lock left by a dead writer, an interrupted write, a USER.md or index that
 * is not UTF-8, and files the profile refuses (symlinks, wrong types).
 */
import * as Effect from "effect/Effect"
import type { AgentPaths } from "../../domain/AgentPaths.js"
import type { FindingDraft } from "../../domain/FindingDraft.js"
import { buildModel } from "../../domain/UserProfile.js"
import { utf8Bytes } from "../../domain/Bytes.js"
import { DEFAULT_PROFILE_BUDGET_BYTES } from "../../domain/UserProfileText.js"
import { profileReader } from "../UserProfile.js"
import { blockedPathFindings } from "./blockedPath.js"
import type { Deps } from "./deps.js"
import { judgeMarker } from "./markers.js"
import { shellWord } from "../../domain/FixCommands.js"
import type { UnsafeProfileReason } from "../../domain/UserProfileErrors.js"

const EDIT_FIX = "the next profile edit (pi-storage memory add, replace or remove) repairs it"
const TOO_LARGE_FIX = "move it aside (it is kept as it is) and add back what matters with pi-storage memory add"
const NOT_UTF8_FIX = "convert it to UTF-8 (for a Latin-1 file: iconv -f latin1 -t utf-8) or move it aside; the profile never rewrites it"

const LINK_FIX = "replace the link or entry with a regular file or directory"

/** What to do about a refused profile path, by the reason it was refused. */
const unsafeFix = (reason: UnsafeProfileReason, path: string): string =>
  reason === "foreign-owner"
    ? `see who made it (\`ls -ldn ${shellWord(path)}\`); the profile reads and writes only this user's files and directories: if it is not yours, move it aside`
    : reason === "world-writable"
    ? `run \`chmod o-w ${shellWord(path)}\`, then check what others may have put in it`
    : reason === "symlink"
    ? "replace the link with the real directory or file it stands for (the profile never goes through a link)"
    : reason === "not-a-directory" || reason === "not-a-regular-file"
    ? "move it aside: the profile makes what it needs there"
    : LINK_FIX

/** Never fails: what cannot be read is a finding. `paths` are the Doctor's `AgentDir` paths. */
export const userProfileFindings = (deps: Deps, paths: AgentPaths): Effect.Effect<ReadonlyArray<FindingDraft>> =>
  Effect.gen(function*() {
    const reader = profileReader(deps.fs, paths, deps.host.uid)
    const findings: Array<FindingDraft> = []
    const lock = yield* judgeMarker(deps, reader.lockPath)
    if (lock !== undefined && !lock.alive) {
      findings.push({ code: "user-profile-dead-lock", path: reader.lockPath, message: `profile lock of a dead writer (${lock.detail})`, fix: "the next profile mutation reclaims it" })
    }
    const read = yield* Effect.either(reader.readState)
    // A world-writable state/ is the doctor's own finding (state-world-writable, a real directory's): one finding
    // per problem. Through a link, it is this one.
    if (read._tag === "Left" && read.left._tag === "UnsafeProfile" && read.left.reason === "world-writable" && read.left.path === paths.stateDir()) {
      const state = yield* deps.fs.lstat(paths.stateDir()).pipe(Effect.option)
      if (state._tag === "Some" && state.value.type === "Directory") return findings
    }
    if (read._tag === "Left") {
      const e = read.left
      // ENOTDIR: an entry on the way is not a directory, so nothing below it is there to be unsafe.
      const path = e._tag === "UnsafeProfile" || e._tag === "FileSystemError" ? e.path : reader.archiveDir
      // A report names what it found (the refusal's own "nothing was changed" is for the refused edit).
      const message = e._tag === "UnsafeProfile" ? `the user profile is refused at ${e.path} (${e.reason}): ${e.detail}` : e.message
      const unsafe: FindingDraft = { code: "user-profile-unsafe", path, message, fix: e._tag === "UnsafeProfile" ? unsafeFix(e.reason, e.path) : LINK_FIX }
      if (e._tag === "FileSystemError" && e.reason === "NotADirectory") {
        return [...findings, ...yield* blockedPathFindings(deps, paths.agentDir, e.path, "the user profile", unsafe)]
      }
      findings.push(
        e._tag === "UnsafeProfile" && e.reason === "not-utf8"
          ? { code: "user-profile-not-utf8", path, message: e.message, fix: NOT_UTF8_FIX }
          : e._tag === "UnsafeProfile" && e.reason === "too-large"
          ? { ...unsafe, fix: TOO_LARGE_FIX }
          : unsafe
      )
      return findings
    }
    const state = read.right
    const bytes = utf8Bytes(state.user ?? "")
    if (bytes > DEFAULT_PROFILE_BUDGET_BYTES) {
      findings.push({
        code: "user-profile-over-budget",
        path: paths.userFile,
        message: `USER.md is ${bytes} bytes, over its ${DEFAULT_PROFILE_BUDGET_BYTES}-byte budget (it is in every prompt)`,
        fix: "the next profile mutation moves its hot entries into the archive"
      })
    }
    const model = buildModel(state)
    if ((model.pointer || state.indexExists) && state.indexed === null) {
      findings.push({
        code: "user-profile-index-missing",
        path: reader.indexPath,
        message: state.indexExists ? "USER.md points to an archive index that does not parse" : "USER.md points to an archive index that is missing",
        fix: `${EDIT_FIX}: the index is rebuilt from the shards present`
      })
    }
    if (state.indexed !== null && model.unlisted.length > 0) {
      findings.push({
        code: "user-profile-unlisted-shard",
        path: reader.archiveDir,
        message: `${model.unlisted.length} shard(s) the index does not list: ${model.unlisted.slice(0, 5).join(", ")}`,
        fix: `${EDIT_FIX}: they are adopted into the index`
      })
    }
    for (const u of state.unparsable) {
      findings.push({
        code: "user-profile-unparsable-shard",
        path: reader.shardPath(u.shard),
        message: `${u._tag === "ShardUnparsable" ? "shard does not parse" : "shard is not read"} (${u.why}); profile edits are refused until it is fixed`,
        fix: u._tag === "ShardNotUtf8"
          ? NOT_UTF8_FIX
          : u._tag === "ShardTooLarge"
          ? "move it out of the archive (a shard is small text)"
          : "repair its front matter (--- YAML --- then a blank line and the entries; no aliases) or move it out of the archive"
      })
    }
    if (state.journal !== null) {
      findings.push({ code: "user-profile-interrupted-write", path: reader.journalPath, message: "a profile write was interrupted (a crash)", fix: `${EDIT_FIX}: it is finished or undone` })
    }
    return findings
  })
