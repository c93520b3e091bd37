#!/usr/bin/env node
/**
 * The shipped `pi-storage` bin (dist/bundle/cli/main.mjs, docs/install.md "Installing"): launch.ts, then the program from
 * its CommonJS bundle beside this file (`program.cjs`), compiled through its V8 code cache (codeCache.ts);
 * `config snapshot`'s clean-scan answer from `configFast.mjs` beside it.
 */
import { fileURLToPath } from "node:url"
import { requireWithCodeCache } from "./codeCache.js"
import { launch } from "./launch.js"
import type * as Program from "./program.js"

import type * as Fast from "./configFast.js"

await launch(
  process.argv.slice(2),
  async () => requireWithCodeCache(fileURLToPath(new URL("./program.cjs", import.meta.url))) as typeof Program,
  // Its own small file beside this one (scripts/bundle.mjs), read only by `config snapshot`.
  () => import(new URL("./configFast.mjs", import.meta.url).href) as Promise<typeof Fast>
)
