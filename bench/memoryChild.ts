/**
 * Child process of measurement 3: open a store over a prepared tenant, run one prune where nothing
 * qualifies (or, with `--idle`, only load the library and build the runtime), and print the peak RSS.
 */
import { scanOnce, scanRuntime } from "./tree.js"

const [agentDir, tenant, mode] = process.argv.slice(2)
if (agentDir === undefined || tenant === undefined) throw new Error("usage: memoryChild <agentDir> <tenant> [--idle]")
const runtime = scanRuntime(agentDir)
let kept = 0
if (mode === "--idle") {
  await runtime.runtime()
} else {
  const report = await scanOnce(runtime, tenant)
  kept = report.kept.length
}
await runtime.dispose()
const usage = process.resourceUsage()
process.stdout.write(`${JSON.stringify({ maxRssKiB: usage.maxRSS, kept, heapUsed: process.memoryUsage().heapUsed })}\n`)
