/**
 * The dashboard's safety rules (docs/dashboard.md "Dashboard"), as plain functions: the 128-bit token a person opens the
 * page with (exchanged for an `HttpOnly; SameSite=Strict` cookie), the `Host` check that defeats DNS rebinding
 * (only the loopback address and port it listens on, or the hosts a host application names), the `Origin`
 * check and the per-page CSRF token every action needs, and the headers every answer carries (a strict
 * Content-Security-Policy, no CORS header ever).
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { sha256Hex } from "../domain/Digest.js"

/** A fresh 128-bit secret, hex. */
export const newToken = (): string => randomBytes(16).toString("hex")

/** Equal secrets, compared in constant time. */
export const sameSecret = (given: string | undefined, expected: string): boolean => {
  if (given === undefined) return false
  const a = Buffer.from(given, "utf8")
  const b = Buffer.from(expected, "utf8")
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * The session cookie's name: one per token, so two dashboards on two ports of 127.0.0.1 (cookies ignore the
 * port) do not overwrite each other's session. The name says nothing of the token (a hash prefix).
 */
export const sessionCookieName = (token: string): string => `pi-storage-${sha256Hex(token).slice(0, 12)}`

export const sessionCookie = (token: string, path: string): string =>
  `${sessionCookieName(token)}=${token}; Path=${path}; HttpOnly; SameSite=Strict`

/** `Cookie:` header → name → value (the first of a name wins, as browsers send the most specific first). */
export const parseCookies = (header: string | undefined): ReadonlyMap<string, string> => {
  const out = new Map<string, string>()
  if (header === undefined) return out
  for (const part of header.split(";")) {
    const at = part.indexOf("=")
    if (at <= 0) continue
    const name = part.slice(0, at).trim()
    if (!out.has(name)) out.set(name, part.slice(at + 1).trim())
  }
  return out
}

/** The Host values a loopback listener answers: `127.0.0.1:PORT` and `localhost:PORT`. */
export const loopbackHosts = (port: number): ReadonlyArray<string> => [`127.0.0.1:${port}`, `localhost:${port}`]

/** DNS rebinding: a page of another site that resolves to 127.0.0.1 still sends its own name as Host. */
export const hostAllowed = (host: string | undefined, allowed: ReadonlyArray<string>): boolean =>
  host !== undefined && allowed.includes(host.toLowerCase())

/** A state change must come from a page of this dashboard: `Origin` is `http(s)://<an allowed Host>`. */
export const originAllowed = (origin: string | undefined, allowed: ReadonlyArray<string>): boolean => {
  if (origin === undefined) return false
  const m = /^https?:\/\/([^/]+)$/.exec(origin.toLowerCase())
  return m !== null && allowed.includes(m[1]!)
}

const mac = (secret: Buffer, nonce: string) => createHmac("sha256", secret).update(nonce).digest("hex")

/** A CSRF token for one page: a fresh nonce and its MAC under the dashboard's secret (nothing to remember). */
export const newCsrfToken = (secret: Buffer): string => {
  const nonce = randomBytes(16).toString("hex")
  return `${nonce}.${mac(secret, nonce)}`
}

export const csrfValid = (secret: Buffer, token: string | undefined): boolean => {
  if (token === undefined) return false
  const m = /^([0-9a-f]{32})\.([0-9a-f]{64})$/.exec(token)
  return m !== null && sameSecret(m[2], mac(secret, m[1]!))
}

/** Only the dashboard's own files and API: no inline script or style, no remote anything, no framing. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

/** On every answer. (No `Access-Control-*` header, ever: no CORS.) */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "no-store"
}

/** The header the page sends its CSRF token in. */
export const CSRF_HEADER = "x-csrf-token"
