/**
 * What every `pi-storage config …` verb shares, without `@effect/cli`: the history of the CLI's agent dir, and
 * `config snapshot` itself, which the command tree (config.ts) and the short route (route.ts, direct.ts) both
 * run, so a snapshot prints, complains and exits the same whichever way it was reached.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ConfigHistoryOptions } from "../../services/ConfigHistory.js"
import { type CliContext, out, printJson, reportError, withAgentDirStack } from "../context.js"
import { renderSnapshot } from "./configRender.js"

export { renderSnapshot, short } from "./configRender.js"

export type History = import("../../services/ConfigHistory.js").ConfigHistory["Type"]

/** Run `use` with the config history of the CLI's agent dir. */
export const withHistory = <A>(
  ctx: CliContext,
  options: ConfigHistoryOptions,
  use: (h: History, agentDir: string) => Effect.Effect<A, { readonly _tag: string; readonly message: string }>
) =>
  withAgentDirStack(ctx, (s) =>
    Effect.gen(function*() {
      const [{ ConfigHistory }, NodeProcessRunner] = yield* Effect.promise(() =>
        Promise.all([import("../../services/ConfigHistory.js"), import("../../layers/NodeProcessRunner.js")])
      )
      const agentDir = yield* s.AgentDir
      const layer = ConfigHistory.layerWith(options).pipe(Layer.provide(Layer.merge(NodeProcessRunner.layer, Layer.succeed(s.AgentDir, agentDir))))
      const history = yield* Effect.provide(ConfigHistory, layer)
      return yield* use(history, agentDir.path).pipe(Effect.catchAll((e) => reportError(ctx, e)))
    }))

export interface SnapshotFlags {
  readonly message: string
  readonly json: boolean
  /** `--web-data-root DIR`; `undefined`: the service resolves it (TD1). */
  readonly webDataRoot: string | undefined
}

/** `pi-storage config snapshot [-m MSG] [--json] [--web-data-root DIR]`. */
export const configSnapshot = (ctx: CliContext, o: SnapshotFlags) =>
  withHistory(ctx, o.webDataRoot === undefined ? {} : { webDataRoot: o.webDataRoot }, (h) =>
    Effect.flatMap(h.snapshot({ message: o.message }), (r) => o.json ? printJson(r) : out(renderSnapshot(ctx.paint, r))))
