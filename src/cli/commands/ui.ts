/**
 * `pi-storage ui [--port N] [--open] [--read-only] [--web-data-root DIR] [--root DIR]`: the dashboard (docs/dashboard.md
 * "Dashboard") on 127.0.0.1, until Ctrl-C. The server code is loaded only here (uiServer.ts; in the shipped CLI
 * its own bundle, `ui.cjs`, which scripts/bundle.mjs substitutes for the import below), so no other command
 * pays for it.
 */
import * as Effect from "effect/Effect"
import { type CliContext, complain, err, out } from "../context.js"
import { ExitCode } from "../exit.js"
import { txt } from "../format.js"
import { shellWord } from "../../domain/FixCommands.js"

export interface UiFlags {
  readonly port: number
  readonly open: boolean
  readonly readOnly: boolean
  readonly webDataRoot: string | undefined
  readonly backupRoot: string | undefined
}

export const ui = (ctx: CliContext, flags: UiFlags) =>
  Effect.gen(function*() {
    const server = yield* Effect.promise(() => import("../uiServer.js"))
    const cli = `pi-storage${ctx.globals.agentDir === undefined ? "" : ` --agent-dir ${shellWord(ctx.globals.agentDir)}`}`
    const outcome = yield* Effect.async<{ readonly ok: true } | { readonly ok: false; readonly message: string }>((resume, signal) => {
      void server.serveUi(
        { agentDir: ctx.globals.agentDir, webDataRoot: flags.webDataRoot, backupRoot: flags.backupRoot, port: flags.port, readOnly: flags.readOnly, open: flags.open, cli },
        {
          listening: ({ url }) =>
            Effect.runSync(out(txt`${ctx.paint("bold", "pi-storage dashboard")}${flags.readOnly ? " (read-only)" : ""}: ${url}\nOpen it in a browser on this machine; Ctrl-C stops it.\n`)),
          warning: (message) => Effect.runSync(err(txt`pi-storage: warning: ${message}\n`))
        },
        signal
      ).then((o) => resume(Effect.succeed(o)), (e: unknown) => resume(Effect.succeed({ ok: false, message: String(e) })))
    })
    if (!outcome.ok) yield* complain(ctx, outcome.message, ExitCode.refused)
  })
