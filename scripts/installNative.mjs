// The package's install step: build the native walker (native/fsat.c) with node-gyp, and never fail the install.
// When the Node running the install ships its own headers (Debian's /usr/include/node, an official tarball's or
// nvm's <prefix>/include/node) and they are this Node's version, node-gyp is pointed at them: the build then
// needs no download, so it works offline, behind a proxy and with an empty HOME. Otherwise node-gyp fetches the
// headers as it always does. A failed build leaves the portable walker in use and says so.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const prefix = path.dirname(path.dirname(process.execPath))
const versionHeader = path.join(prefix, "include", "node", "node_version.h")

/** `major.minor.patch` from node_version.h, or undefined when the file is not there or says something else. */
const headerVersion = (file) => {
  let text
  try {
    text = fs.readFileSync(file, "utf8")
  } catch {
    return undefined
  }
  const part = (name) => new RegExp(`#define ${name} (\\d+)`).exec(text)?.[1]
  const [major, minor, patch] = [part("NODE_MAJOR_VERSION"), part("NODE_MINOR_VERSION"), part("NODE_PATCH_VERSION")]
  return major && minor && patch ? `${major}.${minor}.${patch}` : undefined
}

const ownHeaders = !process.env.npm_config_nodedir && headerVersion(versionHeader) === process.versions.node
const args = ["rebuild", ...(ownHeaders ? [`--nodedir=${prefix}`] : [])]
// npm gives a lifecycle script the path of its bundled node-gyp; run directly, node-gyp is looked up on PATH.
const gyp = process.env.npm_config_node_gyp
const result = gyp
  ? spawnSync(process.execPath, [gyp, ...args], { stdio: "inherit" })
  : spawnSync("node-gyp", args, { stdio: "inherit" })
if (result.status !== 0) console.log("pi-agent-storage: native walker not built, the portable walker is used")
