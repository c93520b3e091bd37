/**
 * Measurement 5, start-up and install footprint (BENCHMARKS.md "Start-up and install"), all from the shipped artifacts: the package is
 * packed and installed into an empty project, as a user would get it, and timed there beside `node -e 0`,
 * alternating. The installs ask the registry on 127.0.0.1 that the consumer tests use
 * (test/support/localRegistry.ts: the packed tarball plus the repository's `node_modules`, a cache of its
 * own), so they need no network and nothing in the user's npm cache. Timed:
 * - `import("pi-agent-storage/promise")`: wall and peak RSS;
 * - `pi-storage status` on a small agent dir, and `pi-storage --version`, through the installed bin;
 * - the Effect API (`import("pi-agent-storage")`, plain ESM on the caller's effect) beside `import("effect")`,
 *   in the repo, where effect is installed (a Promise-only install has none);
 * - packages and MB that `npm install <tarball>` pulls into an empty project, now and with the dependency
 *   list the package declared before it was bundled (effect and the whole CLI stack as run-time dependencies).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { startLocalRegistry } from "../test/support/localRegistry.js"
import { buildTenant, ensureWorkRoot, tenantDirOf } from "./fixtures.js"
import type { Measurement, Row } from "./result.js"
import { REPO_DIR, run, summarize, BUILT_CLI, withoutExtraCaCerts } from "./util.js"

export interface CliOptions {
  readonly root: string
  readonly reps: number
  readonly log: (line: string) => void
}

/** What `pi-agent-storage` 0.1.0 declared as run-time dependencies before it was bundled (the "before" install). */
const DEPENDENCIES_BEFORE = [
  "@effect/cli@0.77.2",
  "@effect/platform@0.97.2",
  "@effect/platform-node@0.108.2",
  "@effect/printer@0.51.0",
  "@effect/printer-ansi@0.51.0",
  "@effect/typeclass@0.41.0",
  "effect@3.22.4",
  "yaml@2.9.1"
]

const PRINT_RSS = "process.stdout.write(String(process.resourceUsage().maxRSS))" // KiB

const npm = async (args: ReadonlyArray<string>, cwd: string) => {
  const r = await run("npm", args, { cwd })
  if (r.code !== 0) throw new Error(`npm ${args.join(" ")} failed (${r.code}): ${r.stderr.slice(-800)}`)
  return r.stdout
}

/** Packages (node_modules/.package-lock.json entries) and bytes (`du -sb`) of a project's node_modules. */
const footprint = async (project: string) => {
  const lock = JSON.parse(fs.readFileSync(path.join(project, "node_modules", ".package-lock.json"), "utf8")) as { packages: Record<string, unknown> }
  const du = await run("du", ["-sb", path.join(project, "node_modules")])
  return { packages: Object.keys(lock.packages).filter((k) => k !== "").length, bytes: Number(du.stdout.split("\t")[0]) }
}

const emptyProject = (dir: string) => {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, allowScripts: { "pi-agent-storage": true } }))
  return dir
}

/**
 * The "before" install: our tarball plus the old run-time dependencies at their exact versions. The local
 * registry serves only the versions installed in the repository, so their dependencies resolve as the repo's
 * lockfile resolved them. Scripts off: its own addon build would only add to it; the dependency tree is the
 * point.
 */
const beforeProject = (dir: string, tarball: string) => {
  emptyProject(dir)
  const dependencies = Object.fromEntries(DEPENDENCIES_BEFORE.map((spec) => {
    const at = spec.lastIndexOf("@")
    return [spec.slice(0, at), spec.slice(at + 1)]
  }))
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, dependencies: { ...dependencies, "pi-agent-storage": `file:${tarball}` } }))
  return dir
}

/**
 * Every timed process (ours and `node -e 0`) runs as on a user's machine: without `NODE_EXTRA_CA_CERTS`, which
 * this VM sets and which makes Node read a certificate bundle at every start (bench/util.ts), so
 * every ratio here was diluted by it until 2026-12-03 (BENCHMARKS.md "Start-up without the VM's certificates").
 */
const USER_ENV = withoutExtraCaCerts()

const timed = async (args: ReadonlyArray<string>, cwd: string) => {
  const r = await run(process.execPath, args, { cwd, env: USER_ENV })
  if (r.code !== 0) throw new Error(`node ${args.join(" ")} failed (${r.code}): ${r.stderr.slice(0, 800)}`)
  return r
}

export const benchCli = async (o: CliOptions): Promise<Measurement> => {
  if (!fs.existsSync(BUILT_CLI)) {
    return { name: "5 start-up", rows: [], notes: { skipped: "dist/bundle is missing: run `npm run build` first" } }
  }
  const dir = path.join(o.root, "startup")
  fs.mkdirSync(dir, { recursive: true })
  o.log("start-up: packing and installing the tarball from a registry on 127.0.0.1 (now, and with the dependencies of before)")
  const packed = JSON.parse(await npm(["pack", "--ignore-scripts", "--json", "--pack-destination", dir], REPO_DIR)) as Array<{ filename: string }>
  const tarball = path.join(dir, packed[0]!.filename)
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO_DIR, "package.json"), "utf8")) as Record<string, unknown>
  const registry = await startLocalRegistry({ nodeModules: path.join(REPO_DIR, "node_modules"), tarballs: [{ file: tarball, manifest }], workDir: path.join(dir, "registry") })
  const after = emptyProject(path.join(dir, "after"))
  const before = beforeProject(path.join(dir, "before"), tarball)
  try {
    await npm(["install", ...registry.npmArgs, tarball], after)
    await npm(["install", ...registry.npmArgs, "--ignore-scripts"], before)
  } finally {
    await registry.close()
  }
  const [sizeAfter, sizeBefore] = await Promise.all([footprint(after), footprint(before)])

  const agentDir = path.join(dir, "agent")
  ensureWorkRoot(agentDir)
  buildTenant(tenantDirOf(agentDir, "small"), "small", { runs: 5, filesPerRun: 4 })
  const cli = path.join(after, "node_modules", "pi-agent-storage", "dist", "bundle", "cli", "main.mjs")
  const bare = { wall: [] as Array<number>, rss: [] as Array<number> }
  const facade = { wall: [] as Array<number>, rss: [] as Array<number> }
  const status: Array<number> = []
  const version: Array<number> = []
  const effectApi: Array<number> = []
  const effect: Array<number> = []
  const kinds = ["bare", "facade", "status", "version", "effectApi", "effect"] as const
  for (let rep = 0; rep < o.reps; rep++) {
    // A rotating order, so no kind always runs right after the same other one.
    for (let k = 0; k < kinds.length; k++) {
      const kind = kinds[(k + rep) % kinds.length]!
      if (kind === "bare") {
        const r = await timed(["-e", PRINT_RSS], after)
        bare.wall.push(r.wallMs)
        bare.rss.push(Number(r.stdout) / 1024)
      } else if (kind === "facade") {
        const r = await timed(["--input-type=module", "-e", `await import("pi-agent-storage/promise");${PRINT_RSS}`], after)
        facade.wall.push(r.wallMs)
        facade.rss.push(Number(r.stdout) / 1024)
      } else if (kind === "status") {
        status.push((await timed([cli, "status", "--agent-dir", agentDir], after)).wallMs)
      } else if (kind === "version") {
        version.push((await timed([cli, "--version"], after)).wallMs)
      } else if (kind === "effectApi") {
        effectApi.push((await timed(["--input-type=module", "-e", `await import("pi-agent-storage")`], REPO_DIR)).wallMs)
      } else {
        effect.push((await timed(["--input-type=module", "-e", `await import("effect")`], REPO_DIR)).wallMs)
      }
    }
  }
  const bareWall = summarize(bare.wall)
  const vsBare = (label: string, values: ReadonlyArray<number>, target: number): Row => {
    const ours = summarize(values)
    return { label, unit: "ms", ours, baseline: bareWall, baselineName: "node -e 0", ratio: ours.median / bareWall.median, target }
  }
  const facadeRss = summarize(facade.rss)
  const bareRss = summarize(bare.rss)
  const effectS = summarize(effect)
  const effectApiS = summarize(effectApi)
  const one = (n: number) => summarize([n])
  return {
    name: "5 start-up",
    rows: [
      vsBare("import pi-agent-storage/promise wall", facade.wall, 2),
      { label: "import pi-agent-storage/promise peak RSS", unit: "MiB", ours: facadeRss, baseline: bareRss, baselineName: "node -e 0", ratio: facadeRss.median / bareRss.median, maxOver: 15 },
      vsBare("pi-storage status (small agent dir)", status, 3),
      vsBare("pi-storage --version", version, 2),
      { label: "import pi-agent-storage (Effect API)", unit: "ms", ours: effectApiS, baseline: effectS, baselineName: "import effect", ratio: effectApiS.median / effectS.median },
      { label: "npm install <tarball>: MB", unit: "MB", ours: one(sizeAfter.bytes / 1e6), baseline: one(sizeBefore.bytes / 1e6), baselineName: "deps before", ratio: sizeAfter.bytes / sizeBefore.bytes, max: 10 },
      { label: "npm install <tarball>: packages", unit: "pkgs", ours: one(sizeAfter.packages), baseline: one(sizeBefore.packages), baselineName: "deps before", ratio: sizeAfter.packages / sizeBefore.packages }
    ],
    notes: {
      reps: o.reps,
      installedAfter: fs.readdirSync(path.join(after, "node_modules")).filter((n) => !n.startsWith(".")),
      tarball: path.basename(tarball),
      rssMiB: { facade: Math.round(facadeRss.median * 10) / 10, bare: Math.round(bareRss.median * 10) / 10 }
    }
  }
}
