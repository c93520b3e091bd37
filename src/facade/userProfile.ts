/**
 * The Promise view of the USER.md profile (docs/user-profile.md "User profile (USER.md)"): `storage.userProfile({ budgetBytes? })`. Building it
 * does no I/O; each method builds the service over the store's runtime and rejects with the typed errors
 * (`InvalidEntry`, `EntryNotFound`, `AmbiguousEntry`, `UnsafeProfile`, `ProfileBusy`, `InvalidArgument` …).
 */
import * as Effect from "effect/Effect"
import type { AgentDir } from "../services/AgentDir.js"
import type { FileSystem } from "../services/FileSystem.js"
import type { Host } from "../services/Host.js"
import { type ProfileChange, type ProfileView, UserProfile, type UserProfileOptions } from "../services/UserProfile.js"

export type { ProfileChange, ProfileView, UserProfileOptions }

export interface PromiseUserProfile {
  /** The whole profile: USER.md's text, every entry once (archived first) with a stable id, bytes and budget. */
  read(): Promise<ProfileView>
  /** Append one entry; a duplicate is a no-op (`outcome: "duplicate"`); over budget the hot body is archived. */
  add(text: string): Promise<ProfileChange>
  /** Replace the entry that is `old`, else the only one containing it (several: `AmbiguousEntry`). */
  replace(old: string, text: string): Promise<ProfileChange>
  /** Remove the entry that is `old`, else the only one containing it. */
  remove(old: string): Promise<ProfileChange>
}

type Run = <A, E>(effect: Effect.Effect<A, E, FileSystem | Host | AgentDir>) => Promise<A>

export const promiseUserProfile = (run: Run, options: UserProfileOptions = {}): PromiseUserProfile => {
  const use = <A, E>(f: (profile: UserProfile["Type"]) => Effect.Effect<A, E>) => run(Effect.flatMap(UserProfile.make(options), f))
  return {
    read: () => use((p) => p.read),
    add: (text) => use((p) => p.add(text)),
    replace: (old, text) => use((p) => p.replace(old, text)),
    remove: (old) => use((p) => p.remove(old))
  }
}
