/**
 * Test support for the user profile: a simulated process with its own UserProfile service, and what the
 * files on disk hold (every fact counted across USER.md and every shard file, listed or not).
 */
import { assert } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { parseShard, SHARD_NAME_RE } from "../../src/domain/UserProfileArchive.js"
import { parseUserText } from "../../src/domain/UserProfileText.js"
import type { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { UserProfile, type UserProfileOptions } from "../../src/services/UserProfile.js"
import { AGENT, spawn } from "./migrationSupport.js"

export { AGENT }
export const ARCHIVE = `${AGENT}/okf-memory/user-preferences`
export const USER = `${AGENT}/USER.md`

/** A new simulated process; `run` gives its UserProfile service to a program. */
export const profileProcess = (world: MemoryWorld, options: UserProfileOptions = {}) => {
  const p = spawn(world)
  const layer = Layer.provideMerge(AgentDir.layer(AGENT), p.layer)
  return {
    pid: p.pid,
    run: <A, E>(use: (profile: UserProfile["Type"]) => Effect.Effect<A, E>) =>
      Effect.provide(Effect.flatMap(UserProfile.make(options), use), layer)
  }
}

/** Run one program as a fresh process (the common case). */
export const asProfile = <A, E>(world: MemoryWorld, use: (profile: UserProfile["Type"]) => Effect.Effect<A, E>, options: UserProfileOptions = {}) =>
  profileProcess(world, options).run(use)

/** Every shard file in the archive dir by name (parsed), listed in the index or not. */
export const shardFiles = (world: MemoryWorld): Record<string, ReadonlyArray<string>> => {
  const out: Record<string, ReadonlyArray<string>> = {}
  for (const [path, e] of Object.entries(world.tree(ARCHIVE))) {
    const name = path.slice(ARCHIVE.length + 1)
    if (e.type !== "File" || !SHARD_NAME_RE.test(name)) continue
    const parsed = parseShard(world.readFixtureText(path) ?? "")
    assert.isTrue(parsed.ok, `${name} does not parse`)
    if (parsed.ok) out[name] = parsed.shard.entries
  }
  return out
}

/** How often each fact is on disk, across USER.md and every shard file. */
export const factCounts = (world: MemoryWorld): Map<string, number> => {
  const counts = new Map<string, number>()
  const count = (e: string) => counts.set(e, (counts.get(e) ?? 0) + 1)
  for (const entries of Object.values(shardFiles(world))) entries.forEach(count)
  parseUserText(world.readFixtureText(USER) ?? "").entries.forEach(count)
  return counts
}

/** The files hold exactly `facts`, each once, and no journal or lock is left. */
export const assertSettled = (world: MemoryWorld, facts: ReadonlyArray<string>, what: string) => {
  const counts = factCounts(world)
  assert.deepStrictEqual([...counts.keys()].sort(), [...facts].sort(), `${what}: the facts on disk`)
  for (const [fact, n] of counts) assert.strictEqual(n, 1, `${what}: ${JSON.stringify(fact)} is on disk ${n} times`)
  const state = world.tree(`${AGENT}/state/user-profile`)
  assert.isUndefined(state[`${AGENT}/state/user-profile/pending.json`], `${what}: a journal is left`)
  assert.isUndefined(state[`${AGENT}/state/user-profile/lock`], `${what}: the lock is left`)
}
