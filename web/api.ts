/**
 * Talking to the dashboard's API: the session cookie goes with every request (same origin), every action is a
 * POST carrying this page's CSRF token (README "Dashboard"). Answers are the API's typed reports.
 */
const meta = (name: string): string => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? ""

export const session = {
  csrf: meta("pi-storage-csrf"),
  base: meta("pi-storage-base"),
  readOnly: meta("pi-storage-read-only") === "true"
}

export class ApiError extends Error {
  constructor(readonly status: number, readonly body: { readonly _tag?: string; readonly message?: string } & Record<string, unknown>) {
    super(body.message ?? `HTTP ${status}`)
  }
}

const answer = async <A>(response: Response): Promise<A> => {
  const text = await response.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = { message: text }
  }
  if (!response.ok) throw new ApiError(response.status, body as ApiError["body"])
  return body as A
}

export const get = async <A>(path: string, params: Record<string, string | undefined> = {}): Promise<A> => {
  const query = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.set(k, v)
  const q = query.toString()
  return answer<A>(await fetch(`${session.base}/api/${path}${q === "" ? "" : `?${q}`}`, { credentials: "same-origin" }))
}

export const post = async <A>(path: string, payload?: unknown): Promise<A> =>
  answer<A>(
    await fetch(`${session.base}/api/${path}`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "x-csrf-token": session.csrf, ...(payload === undefined ? {} : { "content-type": "application/json" }) },
      ...(payload === undefined ? {} : { body: JSON.stringify(payload) })
    })
  )
