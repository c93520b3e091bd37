/**
 * Test support for the user profile: a simulated process with its own UserProfile service, and what the
 * files on disk hold (every fact counted across USER.md and every shard file, listed or not).
 */
import { assert } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { INDEX_FILE, parseShard, SHARD_NAME_RE } from "../../src/domain/UserProfileArchive.js"
import { PROFILE_POINTER, parseUserText } from "../../src/domain/UserProfileText.js"
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
  const layer = Layer.provideMerge(AgentDir.layerWith(AGENT), p.layer)
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

/** What Pi writes today: its pointer, an index with two shards (names not our hashes), extra front-matter keys. */
export const PI_SHARD_1 = "user-preferences-0123456789abcdef.okf.md"
export const PI_SHARD_2 = "user-preferences-fedcba9876543210.okf.md"
export const piShard = (part: number, body: string) =>
  `---\ntype: User Preference\ntitle: User preferences (part ${part})\ndescription: Archived user preferences\n` +
  `tags:\n  - user-preferences\n  - archived\ntimestamp: 2026-10-0${part}T12:00:00.000Z\npi:\n  scope: user\n  source: memory-archive\n  part: ${part}\n---\n\n${body}`
export const PI_INDEX = "---\ntype: User Preference\ntitle: User preference archive\ndescription: Index\ntags: [user-preferences, index]\n" +
  "timestamp: 2026-10-02T12:00:00.000Z\npi: { scope: user }\n---\n\n# User preference archive\n\n" +
  `- [Part 1](${PI_SHARD_1})\n- [Part 2](./${PI_SHARD_2})\n`
export const PI_FACTS = ["- Prefers concise answers", "- Uses pnpm", "- Works in Europe/Paris", "- Likes tabs", "- Hot: answers in French"]
export const seedPi = (world: MemoryWorld) =>
  Effect.all([
    world.writeFixture(USER, `${PROFILE_POINTER}\n- Hot: answers in French\n`),
    world.writeFixture(`${ARCHIVE}/${INDEX_FILE}`, PI_INDEX),
    world.writeFixture(`${ARCHIVE}/${PI_SHARD_1}`, piShard(1, "- Prefers concise answers\n- Uses pnpm\n")),
    world.writeFixture(`${ARCHIVE}/${PI_SHARD_2}`, piShard(2, "- Works in Europe/Paris\n\n- Likes tabs\n"))
  ], { discard: true })
