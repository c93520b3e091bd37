/**
 * `status` as one call (docs/cli.md "CLI quick tour"): the inventory and the doctor's count, over the same agent
 * dir and the same web data root (TD1, resolved once here and handed to both), so `status` can never say
 * "no findings" where `doctor` finds some. The doctor's part is the `Doctor` service's own report, the very
 * call `pi-storage doctor` makes; read-only, as both are.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AgentDirSource } from "../domain/AgentPaths.js"
import { type DoctorSummary, summarizeDoctor } from "../domain/Findings.js"
import type { WebDataRootSource } from "../domain/WebPaths.js"
import { AgentDir } from "./AgentDir.js"
import { Doctor } from "./Doctor.js"
import { Host } from "./Host.js"
import { Inventory, type InventoryOptions, type InventoryReport, tenantSizeBudget } from "./Inventory.js"
import { webDataRootOf } from "./internal/webDataRoot.js"

export interface StatusOptions extends InventoryOptions {
  /** The web data root (else `$PI_WEB_DATA_DIR`, else `~/.pi/web/data`), for the inventory and the doctor alike. */
  readonly webDataRoot?: string
}

export interface StatusReport extends InventoryReport {
  /** Where the agent dir came from (`--agent-dir`/option, `$PI_ADAPTATIVE_CODING_AGENT_DIR`, the default). */
  readonly source: AgentDirSource
  /** Where the web data root came from. */
  readonly webDataRootSource: WebDataRootSource
  /** The doctor's report on the same roots, in numbers (`doctor` for the findings themselves). */
  readonly doctor: DoctorSummary
}

export class Status extends Context.Tag("pi-agent-storage/Status")<Status, {
  readonly status: (options?: StatusOptions) => Effect.Effect<StatusReport>
}>() {
  static readonly make: Effect.Effect<Status["Type"], never, Inventory | Doctor | AgentDir | Host> = Effect.gen(function*() {
    const inventory = yield* Inventory
    const doctor = yield* Doctor
    const agentDir = yield* AgentDir
    const host = yield* Host
    return Status.of({
      status: (options) =>
        Effect.gen(function*() {
          const web = webDataRootOf(host, options?.webDataRoot)
          // One read of the agent dir: the doctor's facts serve the inventory too, when they hold what its
          // own scan would read (Inventory `factsSuffice`; else it scans under its own bounds).
          // Its tenants are measured while the doctor reads them, within the budget the summary measures with.
          // The doctor's scan reads under the summary's scan budget: one bound, one flag (`--max-scan-entries`).
          const found = yield* doctor.doctorWithFacts({
            webDataRoot: web.path,
            tenantSizes: tenantSizeBudget(options),
            ...(options?.maxScanEntries === undefined ? {} : { maxEntries: options.maxScanEntries })
          })
          const report = yield* inventory.summary({ ...options, webDataRoot: web.path }, found.facts)
          return { ...report, source: agentDir.source, webDataRootSource: web.source, doctor: summarizeDoctor(found.report) }
        })
    })
  })

  static readonly layer: Layer.Layer<Status, never, Inventory | Doctor | AgentDir | Host> = Layer.effect(Status, Status.make)
}
