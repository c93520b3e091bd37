/**
 * The page a person opens (docs/dashboard.md "Dashboard"): a small HTML shell carrying this page's CSRF token, the base
 * path and whether actions are offered, and the client bundled at `npm run build` (web/, by esbuild, into
 * `dist/dashboard/assets/`: the client code, d3-hierarchy and uPlot, and the styles). Nothing is fetched from
 * anywhere else: the page works offline, and the Content-Security-Policy allows nothing else.
 */
import * as NodeFs from "node:fs"
import { packageFile } from "../layers/node/packageRoot.js"

/** The files the page loads, as `npm run build` writes them. */
export const ASSET_NAMES = ["app.js", "app.css"] as const

export interface Assets {
  readonly files: ReadonlyMap<string, Uint8Array>
  /** Why the page cannot be served (its files are not built), `null` when they are there. */
  readonly missing: string | null
}

/** The page's files, read once (they ship in the package; nothing is read per request). */
export const loadAssets = (dir: string = packageFile("dist", "dashboard", "assets")): Assets => {
  const files = new Map<string, Uint8Array>()
  const absent: Array<string> = []
  for (const name of ASSET_NAMES) {
    try {
      files.set(name, NodeFs.readFileSync(`${dir}/${name}`))
    } catch {
      absent.push(name)
    }
  }
  return { files, missing: absent.length === 0 ? null : `${absent.join(", ")} missing from ${dir} (run npm run build)` }
}

const attribute = (text: string): string => text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;")

export const pageHtml = (o: { readonly csrf: string; readonly basePath: string; readonly readOnly: boolean; readonly assets: Assets }): string => {
  const head = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>pi-storage</title>`
  if (o.assets.missing !== null) {
    return `${head}
</head>
<body><p>The dashboard's page is not built: ${attribute(o.assets.missing)}.</p></body>
</html>
`
  }
  return `${head}
<meta name="pi-storage-csrf" content="${attribute(o.csrf)}">
<meta name="pi-storage-base" content="${attribute(o.basePath)}">
<meta name="pi-storage-read-only" content="${o.readOnly ? "true" : "false"}">
<link rel="stylesheet" href="${attribute(o.basePath)}/assets/app.css">
<script src="${attribute(o.basePath)}/assets/app.js" defer></script>
</head>
<body><div id="app"><p class="loading">Loading…</p></div></body>
</html>
`
}
