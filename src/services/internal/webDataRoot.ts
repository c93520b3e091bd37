/**
 * The web data root a program works on (TD1): `resolveWebDataRoot` over the Host's environment, home and
 * cwd. Every program that reads or writes extension data (the state snapshots, the config history, the
 * doctor, the inventory, the tiers' `extensionContext`) resolves it here, so they all cover one root.
 */
import { resolveWebDataRoot, type WebDataRootResolution } from "../../domain/WebPaths.js"
import type { Host } from "../Host.js"

export const webDataRootOf = (host: Host["Type"], explicit?: string | undefined): WebDataRootResolution =>
  resolveWebDataRoot({ explicit, env: host.env, home: host.homeDir, cwd: host.cwd })
