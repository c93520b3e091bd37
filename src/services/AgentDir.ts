/**
 * The resolved agent directory (SPEC LA1) as a service, so programs never read the environment themselves.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type AgentDirSource, type AgentPaths, agentPaths, resolveAgentDir } from "../domain/AgentPaths.js"
import { Host } from "./Host.js"

export class AgentDir extends Context.Tag("pi-agent-storage/AgentDir")<AgentDir, {
  readonly path: string
  readonly source: AgentDirSource
  readonly paths: AgentPaths
}>() {
  /** Resolve from an explicit option, then `$PI_ADAPTATIVE_CODING_AGENT_DIR`, then `~/.pi/agent`. */
  static readonly layer = (explicit?: string): Layer.Layer<AgentDir, never, Host> =>
    Layer.effect(
      AgentDir,
      Effect.map(Host, (host) => {
        const resolved = resolveAgentDir({ explicit, env: host.env, home: host.homeDir, cwd: host.cwd })
        return { path: resolved.path, source: resolved.source, paths: agentPaths(resolved.path) }
      })
    )
}
