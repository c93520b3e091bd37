import * as os from "node:os"
import * as path from "node:path"
import { defineConfig } from "vitest/config"

/**
 * The web data root of every test that does not choose its own. Without it the library's default would be
 * the real `~/.pi/web/data` (TD1), which state snapshots, restores and config rollbacks cover: a test must
 * never read, move aside or rewrite a person's extension data. A path under the temp dir that no test creates;
 * tests of the default itself run their children with a scratch HOME and no PI_* variable.
 */
const TEST_WEB_DATA_DIR = path.join(os.tmpdir(), `pi-storage-tests-web-data-${process.pid}`)

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
    isolate: false,
    env: { PI_WEB_DATA_DIR: TEST_WEB_DATA_DIR }
  }
})
