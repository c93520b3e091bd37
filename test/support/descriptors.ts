/**
 * Descriptors this process holds open on paths under a test's scratch root: what a walk's "no descriptor
 * outlives it" checks count. Only under the root, because the worker runs other test files too (vitest
 * `isolate: false`), whose stores may hold descriptors of their own at any moment.
 */
import * as fs from "node:fs"

export const openDescriptorsUnder = (root: string): number =>
  fs.readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(root)
    } catch {
      return false // closed since the listing (the listing's own descriptor among them)
    }
  }).length
