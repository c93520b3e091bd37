/**
 * `pi-storage migrate` on a real agent dir that is a symlink (the user keeps ~/.pi/agent on another disk),
 * through the built CLI: the dry run lists exactly the decisions the real run then executes (docs/migrations.md "Migrations": a
 * dry run that said "nothing to do" while `migrate` moved files would be a second planner). And `migrate --plan FILE` with the documented plan (docs/migrations.md).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { runNode } from "../support/child.js"
import { README_PLAN, readmePlanText } from "../support/readmePlan.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))

const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

const env = (): NodeJS.ProcessEnv => {
  const e = { ...process.env }
  delete e["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  e["NO_COLOR"] = "1"
  return e
}
const cli = (agentDir: string, ...args: ReadonlyArray<string>) => runNode(MAIN, ["--agent-dir", agentDir, ...args], { env: env() })

const write = (root: string, rel: string, content: string) => {
  Fs.mkdirSync(Path.dirname(Path.join(root, rel)), { recursive: true })
  Fs.writeFileSync(Path.join(root, rel), content)
}

describe("pi-storage migrate on a symlinked agent dir (Node, temp dirs)", () => {
  it("--dry-run lists the decisions migrate then executes, one for one, through the link", async () => {
    const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-migrate-"))
    temps.push(base)
    const real = Path.join(base, "disk", "agent")
    const link = Path.join(base, "home", "agent")
    write(real, "trust.json", `{"/a":true,"/b":false}`)
    write(real, "state/trust.json", `{"/b":true}`)
    write(real, "backups/same.json", "same")
    write(real, "state/backups/config/same.json", "same")
    write(real, "backups/diff.json", "legacy")
    write(real, "state/backups/config/diff.json", "canonical")
    write(real, "backups/only/x", "x")
    write(real, "tmp/scratch", "scratch")
    write(real, "settings.json", "{}")
    Fs.mkdirSync(Path.dirname(link), { recursive: true })
    Fs.symlinkSync(real, link)

    const dry = await cli(link, "migrate", "--dry-run", "--json")
    assert.strictEqual(dry.code, 0, dry.stderr)
    const plan = JSON.parse(dry.stdout)
    assert.deepStrictEqual([plan.exists, plan.notADirectory, plan.partial], [true, null, false])
    assert.deepStrictEqual(plan.decisions.map((d: any) => [d.action, d.from, d.to]), [
      ["merge-directory", "backups", "state/backups/config"],
      ["preserve-conflict", "backups/diff.json", "state/migration-conflicts/backups/diff.json"],
      ["move", "backups/only", "state/backups/config/only"],
      ["remove-duplicate", "backups/same.json", "state/backups/config/same.json"],
      ["move", "tmp", "state/legacy-layout/tmp"],
      ["merge-json", "trust.json", "state/trust.json"],
      ["preserve-conflict", "trust.json", "state/migration-conflicts/trust.json"]
    ])
    const human = await cli(link, "migrate", "--dry-run")
    assert.strictEqual(human.code, 0, human.stderr)
    assert.match(human.stdout, /^ {2}move\s+tmp → state\/legacy-layout\/tmp$/m)
    // The dry run changed nothing.
    assert.isTrue(Fs.existsSync(Path.join(real, "trust.json")))
    assert.isTrue(Fs.lstatSync(link).isSymbolicLink())

    const run = await cli(link, "migrate", "--json")
    assert.strictEqual(run.code, 0, run.stderr)
    const report = JSON.parse(run.stdout)
    assert.deepStrictEqual(report.errors, [])
    assert.deepStrictEqual(report.decisions.map(({ outcome, ...d }: any) => d), plan.decisions)
    assert.deepStrictEqual(report.decisions.map((d: any) => d.outcome), plan.decisions.map(() => "done"))
    // Executed in the link's target; the link itself is left as it is.
    assert.isTrue(Fs.lstatSync(link).isSymbolicLink())
    assert.deepStrictEqual(Fs.readdirSync(real).sort(), ["settings.json", "state"])
    assert.strictEqual(Fs.readFileSync(Path.join(real, "state/legacy-layout/tmp/scratch"), "utf8"), "scratch")
    assert.strictEqual(Fs.readFileSync(Path.join(real, "state/migration-conflicts/backups/diff.json"), "utf8"), "legacy")
    assert.deepStrictEqual(JSON.parse(Fs.readFileSync(Path.join(real, "state/trust.json"), "utf8")), { "/a": true, "/b": true })

    const after = await cli(link, "migrate", "--dry-run")
    assert.strictEqual(after.stdout, "Nothing to migrate: the layout is current.\n")
  })

  it("the doctor reports what a plan kept under a web extension's state/migration-conflicts, as under the agent dir's", async () => {
    const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-web-conflicts-"))
    temps.push(base)
    const agent = Path.join(base, "agent")
    const web = Path.join(base, "web")
    Fs.mkdirSync(agent, { recursive: true })
    write(web, "u/state/f", "live")
    write(web, "u/old/f", "other")
    const plan = Path.join(base, "p.yaml")
    Fs.writeFileSync(plan, "version: 1\nid: w\nroot: { web: u }\nsteps: [{id: s, kind: move, from: old, to: state}]\n")
    const run = await cli(agent, "migrate", "--plan", plan, "--web-data-root", web, "--json")
    assert.strictEqual(run.code, 0, run.stderr)
    assert.isTrue(Fs.existsSync(Path.join(web, "u/state/migration-conflicts/w/s/f")))
    const doctor = await cli(agent, "doctor", "--web-data-root", web, "--json")
    const finding = JSON.parse(doctor.stdout).findings.find((f: { code: string }) => f.code === "migration-conflicts")
    assert.strictEqual(finding?.path, Path.join(web, "u/state/migration-conflicts"))
    assert.match(finding?.message ?? "", /1 preserved migration conflict\(s\) to review: w/)
  })

  it("a link at state/migration-conflicts never takes a preserved copy: the colliding entry is refused and left, its other units still migrate", async () => {
    const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-migrate-conflicts-link-"))
    temps.push(base)
    const agent = Path.join(base, "agent")
    const elsewhere = Path.join(base, "elsewhere")
    Fs.mkdirSync(elsewhere)
    Fs.chownSync(elsewhere, 12345, 12345)
    Fs.chmodSync(elsewhere, 0o777)
    write(agent, "backups/x/f", "legacy only copy")
    write(agent, "state/backups/config/x/f", "canonical")
    write(agent, "trust.json", `{"/a":true}`)
    Fs.symlinkSync(elsewhere, Path.join(agent, "state/migration-conflicts"))
    for (const args of [["--dry-run", "--json"], ["--json"]]) {
      const r = await cli(agent, "migrate", ...args)
      const report = JSON.parse(r.stdout) as { decisions: ReadonlyArray<{ action: string; from: string; why: string }> }
      const backups = report.decisions.find((d) => d.from === "backups")
      assert.strictEqual(backups?.action, "refuse", JSON.stringify(report.decisions))
      assert.match(backups!.why, /state\/migration-conflicts is a symlink on the way \(never written through\)/)
      assert.strictEqual(report.decisions.find((d) => d.from === "trust.json")?.action, "move")
    }
    assert.deepStrictEqual(Fs.readdirSync(elsewhere), [], "nothing went through the link")
    assert.strictEqual(Fs.readFileSync(Path.join(agent, "backups/x/f"), "utf8"), "legacy only copy")
    assert.strictEqual(Fs.readFileSync(Path.join(agent, "state/backups/config/x/f"), "utf8"), "canonical")
    assert.isTrue(Fs.existsSync(Path.join(agent, "state/trust.json")))
  })
})

// ---------------------------------------------------------------------------------------------------------
// `migrate --plan FILE`: per-entry plans from the deployment flow (docs/migrations.md "Migrations"), through the built CLI
// on real disk, with the documented plan (docs/migrations.md).

/** Every entry under `root`: type, content, and the inode facts a rewrite would change (a rerun must change none). */
const tree = (root: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of Fs.readdirSync(dir).sort()) {
      const path = Path.join(dir, name)
      const st = Fs.lstatSync(path)
      const rel = Path.relative(root, path)
      if (st.isDirectory()) {
        out[rel] = "dir"
        walk(path)
      } else if (st.isSymbolicLink()) out[rel] = `link:${Fs.readlinkSync(path)}`
      else out[rel] = `file:${st.ino}:${st.mtimeMs}:${Fs.readFileSync(path, "utf8")}`
    }
  }
  walk(root)
  return out
}

const LEGACY_USAGE = `{"id":"r1","tokens":10}\n{"id":"r2","tokens":20}\n{"id":"r3","tokens":30}\n`
const NEWER_USAGE = `{"id":"r2","tokens":20}\n{"id":"r3","tokens":31}\n{"id":"r4","tokens":40}\n`

/** A scratch deployment: agent dir, web data root with the documented plan's extension split across config/state and state. */
const deployment = () => {
  const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-migrate-plan-"))
  temps.push(base)
  const agent = Path.join(base, "agent")
  const web = Path.join(base, "web")
  const ext = Path.join(web, README_PLAN.extId)
  write(ext, "config/settings.json", `{"theme":"dark"}`)
  write(ext, "config/state/usage.jsonl", LEGACY_USAGE)
  write(ext, "config/state/archive/2026-10.pwarc", "october")
  write(ext, "config/state/notes.md", "legacy notes")
  write(ext, "state/usage.jsonl", NEWER_USAGE)
  write(ext, "state/notes.md", "new notes")
  Fs.mkdirSync(Path.join(ext, "state/archive"))
  const plan = Path.join(base, "migrate-state-tier.yaml")
  Fs.writeFileSync(plan, readmePlanText())
  return { base, agent, web, ext, plan }
}

const cliIn = (cwd: string, env: NodeJS.ProcessEnv, ...args: ReadonlyArray<string>) => runNode(MAIN, args, { env, cwd })

describe("pi-storage migrate --plan (Node, the built CLI, real disk)", () => {
  it("the documented plan: the dry run says what the run does, the run puts every byte in its place and journals it, a rerun is a no-op", async () => {
    const { agent, web, ext, plan } = deployment()
    const conflicts = `state/migration-conflicts/${README_PLAN.id}`

    const dry = await cli(agent, "migrate", "--plan", plan, "--web-data-root", web, "--dry-run", "--json")
    assert.strictEqual(dry.code, 0, dry.stderr)
    const preview = JSON.parse(dry.stdout)
    assert.deepStrictEqual(preview.entries.map((e: any) => [e.id, e.root, e.decisions[0].action]), [
      ["usage-ledger", ext, "merge-ledger"],
      ["legacy-state", ext, "merge-directory"]
    ])
    const human = await cli(agent, "migrate", "--plan", plan, "--web-data-root", web, "--dry-run")
    assert.strictEqual(human.code, 0, human.stderr)
    assert.match(human.stdout, /^\[1\] usage-ledger {2}merge-ledger {2}in .*aiti-usage$/m)
    assert.match(human.stdout, /merged by key: 3 rows in from, 3 rows in to; 1 added/)
    assert.match(human.stdout, /^ {2}move +config\/state\/archive\/2026-10\.pwarc → state\/archive\/2026-10\.pwarc$/m)
    assert.isFalse(Fs.existsSync(agent), "the dry run creates nothing, not even the agent dir")
    assert.strictEqual(Fs.readFileSync(Path.join(ext, "config/state/usage.jsonl"), "utf8"), LEGACY_USAGE)

    // $PI_WEB_DATA_DIR stands in for --web-data-root.
    const run = await runNode(MAIN, ["--agent-dir", agent, "migrate", "--plan", plan, "--json"], { env: { ...env(), PI_WEB_DATA_DIR: web } })
    assert.strictEqual(run.code, 0, run.stderr)
    const report = JSON.parse(run.stdout)
    assert.isFalse(report.failed)
    assert.deepStrictEqual(report.entries.map((e: any) => e.decisions), preview.entries.map((e: any) => e.decisions))
    assert.deepStrictEqual(report.entries.map((e: any) => [e.id, e.outcome, e.rows, e.conflicts]), [
      ["usage-ledger", "conflict-preserved", 4, [`${conflicts}/usage-ledger`]],
      ["legacy-state", "conflict-preserved", undefined, [`${conflicts}/legacy-state/notes.md`]]
    ])
    // Where every byte landed (MG3): each row once, the newer r3 kept, the losing legacy ledger kept whole.
    const text = (rel: string) => Fs.readFileSync(Path.join(ext, rel), "utf8")
    assert.strictEqual(text("state/usage.jsonl"), `{"id":"r2","tokens":20}\n{"id":"r3","tokens":31}\n{"id":"r4","tokens":40}\n{"id":"r1","tokens":10}\n`)
    assert.strictEqual(text(`${conflicts}/usage-ledger`), LEGACY_USAGE)
    assert.strictEqual(text("state/archive/2026-10.pwarc"), "october")
    assert.strictEqual(text("state/notes.md"), "new notes")
    assert.strictEqual(text(`${conflicts}/legacy-state/notes.md`), "legacy notes")
    assert.deepStrictEqual(Fs.readdirSync(Path.join(ext, "config")), ["settings.json"])
    const journal = Fs.readFileSync(Path.join(agent, "state/migrations", `${README_PLAN.id}.jsonl`), "utf8").trim().split("\n").map((l) => JSON.parse(l))
    assert.deepStrictEqual(journal.map((r) => [r.entryId, r.outcome, r.root]), [["usage-ledger", "conflict-preserved", ext], ["legacy-state", "conflict-preserved", ext]])
    assert.isFalse(Fs.existsSync(Path.join(agent, ".pi-migration.lock")))

    const before = { web: tree(web), agent: tree(agent) }
    const again = await cli(agent, "migrate", "--plan", plan, "--web-data-root", web)
    assert.strictEqual(again.code, 0, again.stderr)
    assert.match(again.stdout, /^already-done {2}\[1\] usage-ledger: /m)
    assert.match(again.stdout, /the source is absent; journal: conflict-preserved at \d{4}-/)
    assert.deepStrictEqual({ web: tree(web), agent: tree(agent) }, before, "a rerun changes nothing")
  })

  it("a bad plan is a usage error naming the step and field, before anything is read or moved", async () => {
    const { base, agent, web, ext } = deployment()
    const before = tree(base)
    const bad = Path.join(base, "bad.yaml")
    const cases: ReadonlyArray<readonly [string, RegExp]> = [
      [readmePlanText().replace("to: state/usage.jsonl", "to: ../other-ext/state/usage.jsonl"), /steps\[0\] \("usage-ledger"\)\.to: "\.\.\/other-ext\/state\/usage\.jsonl" has a "\.\." segment/],
      [readmePlanText().replace("from: config/state\n", "from: /etc\n"), /steps\[1\] \("legacy-state"\)\.from: "\/etc" is absolute/],
      [readmePlanText().replace("    key: id", "    kye: id"), /steps\[0\] \("usage-ledger"\)\.(key: is missing|kye: is unexpected)/],
      [readmePlanText().replace("kind: move", "kind: copy"), /steps\[1\] \("legacy-state"\)\.kind/],
      ["version: 1\nid: x\nsteps: [\n", /not valid YAML/]
    ]
    const results = await Promise.all(cases.map(([text], i) => {
      Fs.writeFileSync(`${bad}.${i}`, text)
      return cli(agent, "migrate", "--plan", `${bad}.${i}`, "--web-data-root", web)
    }))
    cases.forEach(([, why], i) => {
      const r = results[i]!
      assert.strictEqual(r.code, 2, r.stderr)
      assert.match(r.stderr, new RegExp(`^pi-storage: invalid migration plan .*bad\\.yaml\\.${i}: `))
      assert.match(r.stderr, why)
      assert.match(r.stderr, /nothing was moved\n$/)
      assert.strictEqual(r.stdout, "")
      Fs.rmSync(`${bad}.${i}`)
    })
    const [missing, stray] = await Promise.all([
      cli(agent, "migrate", "--plan", Path.join(base, "nope.yaml")),
      cli(agent, "migrate", "--web-data-root", web)
    ])
    assert.strictEqual(missing.code, 2)
    assert.match(missing.stderr, /cannot read the plan .*nope\.yaml: ENOENT/)
    assert.strictEqual(stray.code, 2)
    assert.match(stray.stderr, /--web-data-root goes with --plan FILE/)
    assert.deepStrictEqual(tree(base), before)
    assert.isTrue(Fs.existsSync(Path.join(ext, "config/state/usage.jsonl")))
  })

  it("a link on the way out of the root is never gone through: the step fails, exit 1 naming it, the outside untouched", async () => {
    const { base, agent, web, ext, plan } = deployment()
    // The extension's config/state is a link to a directory elsewhere (a hostile or careless setup).
    const outside = Path.join(base, "outside")
    write(outside, "usage.jsonl", `{"id":"x","tokens":1}\n`)
    write(outside, "keep.txt", "keep")
    Fs.rmSync(Path.join(ext, "config/state"), { recursive: true })
    Fs.symlinkSync(outside, Path.join(ext, "config/state"))
    const outsideBefore = tree(outside)
    const r = await cli(agent, "migrate", "--plan", plan, "--web-data-root", web)
    assert.strictEqual(r.code, 1, r.stderr)
    assert.match(r.stderr, /^pi-storage: step 1 of 2 \("usage-ledger"\) of plan aiti-usage-state-tier failed: config\/state is a symlink on the way \(never written through\)/m)
    assert.match(r.stdout, /^failed {14}\[1\] usage-ledger: /m)
    // Step 2 moves config/state itself: a link is moved as a link (never followed), kept beside state/.
    assert.match(r.stdout, /^conflict-preserved {2}\[2\] legacy-state: /m)
    assert.notMatch(r.stderr, /step 2/)
    assert.strictEqual(Fs.readlinkSync(Path.join(ext, `state/migration-conflicts/${README_PLAN.id}/legacy-state`)), outside)
    assert.deepStrictEqual(tree(outside), outsideBefore)
    assert.strictEqual(Fs.readFileSync(Path.join(ext, "state/usage.jsonl"), "utf8"), NEWER_USAGE)
    const journal = Fs.readFileSync(Path.join(agent, "state/migrations", `${README_PLAN.id}.jsonl`), "utf8")
    assert.match(journal, /"outcome":"failed"/)
    // The dry run says so too (relative --plan and --web-data-root are taken from the working directory).
    Fs.renameSync(Path.join(ext, `state/migration-conflicts/${README_PLAN.id}/legacy-state`), Path.join(ext, "config/state"))
    const dry = await cliIn(base, env(), "--agent-dir", agent, "migrate", "--plan", Path.basename(plan), "--web-data-root", "web", "--dry-run")
    assert.strictEqual(dry.code, 1, dry.stderr)
    assert.match(dry.stdout, /^ {2}refuse +config\/state\/usage\.jsonl → state\/usage\.jsonl$/m)
    assert.match(dry.stdout, /config\/state is a symlink on the way/)
  })
})
