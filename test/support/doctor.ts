/**
 * Test support: the `Doctor` service's report for one agent dir, the way a stack builds it (`AgentDir.make`
 * resolves the path's root link once, `Doctor.make` reads it from the context). Needs only the world's ports.
 */
import { Effect } from "effect"
import { AgentDir } from "../../src/services/AgentDir.js"
import { Doctor, type DoctorOptions } from "../../src/services/Doctor.js"

export const doctorAt = (agentDir: string, options?: DoctorOptions) =>
  Effect.flatMap(Doctor.make, (d) => d.doctor(options)).pipe(Effect.provideServiceEffect(AgentDir, AgentDir.make(agentDir, "option")))
