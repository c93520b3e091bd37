import * as os from "node:os"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest leaves one core free by default: on the 2-core machines this runs on, that is one worker and a
    // suite twice as long. The tests wait on child processes and disks as much as on the CPU: use every core.
    maxWorkers: os.availableParallelism(),
    minWorkers: 1,
    // One module graph per worker, not per test file: importing Effect and the library again for each of
    // ~100 files was half the suite's CPU (vitest's collect phase). Every test file leaves the process as it
    // found it (environment variables, umask and spies restored; scratch dirs of its own), and the facade's
    // and the addon's module caches hold nothing a test relies on being fresh.
    isolate: false
  }
})
