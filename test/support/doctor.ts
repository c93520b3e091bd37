/**
 * Test support: the `Doctor` service's report for one agent dir, the way a stack builds it (`AgentDir.layer`
 * resolves the path's root link once, `Doctor.layer` reads it from the context). Needs only the world's ports.
 */
import { Effect, Layer } from "effect"
import { AgentDir } from "../../src/services/AgentDir.js"
import { Doctor, type DoctorOptions } from "../../src/services/Doctor.js"

export const doctorAt = (agentDir: string, options?: DoctorOptions) =>
  Effect.flatMap(Doctor, (d) => d.doctor(options)).pipe(Effect.provide(Doctor.layer.pipe(Layer.provide(AgentDir.layer(agentDir)))))
