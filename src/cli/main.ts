#!/usr/bin/env node
/**
 * `pi-storage` run from the sources (tsx). The shipped bin is bin.ts, the same launch with the program
 * loaded from its bundle.
 */
import { launch } from "./launch.js"

await launch(process.argv.slice(2), () => import("./program.js"), () => import("./configFast.js"))
