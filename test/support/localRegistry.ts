/**
 * A package registry on 127.0.0.1 made from what this repository already has: every package installed under
 * its `node_modules/` (by `npm ci` from the lockfile), plus tarballs a test adds (the packed library itself).
 * Consumer tests run the README's install lines verbatim against it, with a cache of their own, so they pass
 * on a fresh machine with an empty npm cache and no network, and never depend on what an earlier run left.
 *
 * A package is packed (`npm pack` of its installed directory) the first time its metadata is asked for; the
 * metadata carries each tarball's integrity, as the public registry's does.
 */
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { promisify } from "node:util"

const exec = promisify(execFile)

interface Version {
  readonly manifest: Record<string, unknown>
  /** The installed directory to pack, or an existing tarball. */
  readonly source: { readonly dir: string } | { readonly tarball: string }
  tarball?: string
}

export interface LocalRegistry {
  readonly url: string
  /** npm arguments that install from this registry only, with a cache of its own. */
  readonly npmArgs: ReadonlyArray<string>
  /** Every package name asked for, in order (what the installs needed). */
  readonly requested: ReadonlyArray<string>
  readonly close: () => Promise<void>
}

/** The fields of a package.json that an install reads from the registry's metadata. */
const INSTALL_FIELDS = [
  "name", "version", "dependencies", "optionalDependencies", "peerDependencies", "peerDependenciesMeta",
  "bin", "engines", "os", "cpu", "libc", "scripts", "gypfile", "deprecated"
] as const

const pick = (pkg: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(INSTALL_FIELDS.filter((k) => pkg[k] !== undefined).map((k) => [k, pkg[k]]))

/** Every installed package under `nodeModules`, nested copies included: name → version → directory. */
const installedPackages = (nodeModules: string, into: Map<string, Map<string, Version>>): void => {
  if (!fs.existsSync(nodeModules)) return
  for (const entry of fs.readdirSync(nodeModules, { withFileTypes: true })) {
    if (entry.name.startsWith(".")) continue
    const dir = path.join(nodeModules, entry.name)
    if (entry.name.startsWith("@")) {
      for (const scoped of fs.readdirSync(dir, { withFileTypes: true })) addPackage(path.join(dir, scoped.name), into)
    } else addPackage(dir, into)
  }
}

const addPackage = (dir: string, into: Map<string, Map<string, Version>>): void => {
  const file = path.join(dir, "package.json")
  if (!fs.existsSync(file)) return
  const pkg = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>
  if (typeof pkg.name !== "string" || typeof pkg.version !== "string") return
  const versions = into.get(pkg.name) ?? new Map<string, Version>()
  if (!versions.has(pkg.version)) versions.set(pkg.version, { manifest: pick(pkg), source: { dir } })
  into.set(pkg.name, versions)
  installedPackages(path.join(dir, "node_modules"), into)
}

const integrityOf = (file: string) => {
  const bytes = fs.readFileSync(file)
  return {
    integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`,
    shasum: createHash("sha1").update(bytes).digest("hex")
  }
}

/** Versions sorted as semver sorts plain `x.y.z` (prerelease tags after their release would need more). */
const byVersion = (a: string, b: string) => {
  const pa = a.split(/[.-]/).map((p) => Number.parseInt(p, 10))
  const pb = b.split(/[.-]/).map((p) => Number.parseInt(p, 10))
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0 && !Number.isNaN(d)) return d
  }
  return 0
}

export const startLocalRegistry = async (input: {
  /** The repository's `node_modules`. */
  readonly nodeModules: string
  /** Packed tarballs served under the name and version in their package.json (e.g. this library). */
  readonly tarballs: ReadonlyArray<{ readonly file: string; readonly manifest: Record<string, unknown> }>
  /** Where packed tarballs and the npm cache go (a scratch directory of the caller's). */
  readonly workDir: string
}): Promise<LocalRegistry> => {
  const packages = new Map<string, Map<string, Version>>()
  installedPackages(input.nodeModules, packages)
  for (const t of input.tarballs) {
    const manifest = pick(t.manifest)
    const name = manifest.name as string
    // The given tarball replaces an installed copy of the same name (a dependency of the test tools).
    packages.set(name, new Map([[manifest.version as string, { manifest, source: { tarball: t.file }, tarball: t.file }]]))
  }
  const packDir = path.join(input.workDir, "tarballs")
  fs.mkdirSync(packDir, { recursive: true })
  const requested: Array<string> = []

  const tarballOf = async (version: Version): Promise<string> => {
    if (version.tarball !== undefined) return version.tarball
    if (!("dir" in version.source)) throw new Error("unreachable: a tarball source has its tarball")
    const packed = await exec("npm", ["pack", version.source.dir, "--ignore-scripts", "--json", "--pack-destination", packDir], { cwd: packDir })
    version.tarball = path.join(packDir, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename)
    return version.tarball
  }

  let base = ""
  const tarballs = new Map<string, string>()
  const packument = async (name: string) => {
    const versions = packages.get(name)
    if (versions === undefined) return undefined
    const out: Record<string, unknown> = {}
    for (const [v, version] of versions) {
      const file = await tarballOf(version)
      const key = `${name.replace("/", "__")}-${v}.tgz`
      tarballs.set(key, file)
      out[v] = { ...version.manifest, dist: { tarball: `${base}/-/tarballs/${key}`, ...integrityOf(file) } }
    }
    const latest = [...versions.keys()].sort(byVersion).at(-1)!
    return { name, "dist-tags": { latest }, versions: out }
  }

  const server = http.createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? "/").split("?")[0]!)
    const reply = (status: number, body: unknown, type = "application/json") => {
      res.writeHead(status, { "content-type": type })
      res.end(typeof body === "string" || body instanceof Buffer ? body : JSON.stringify(body))
    }
    if (url.startsWith("/-/tarballs/")) {
      const file = tarballs.get(url.slice("/-/tarballs/".length))
      if (file === undefined) return reply(404, { error: "not found" })
      return reply(200, fs.readFileSync(file), "application/octet-stream")
    }
    const name = url.slice(1)
    requested.push(name)
    packument(name).then(
      (doc) => (doc === undefined ? reply(404, { error: `${name} is not in this repository's node_modules` }) : reply(200, doc)),
      (e: unknown) => reply(500, { error: String(e) })
    )
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const cache = path.join(input.workDir, "npm-cache")
  return {
    url: base,
    npmArgs: [`--registry=${base}`, `--cache=${cache}`, "--no-audit", "--no-fund", "--no-update-notifier"],
    requested,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
