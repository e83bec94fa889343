/**
 * The lab's HTTP vocabulary, shared by its two clients and by everything that sends through them:
 * a request as a scenario writes it, what comes back (an answer, or a failure of a kind the report
 * counts), and the clients a target can send with.
 */

/** Which HTTP client sends a target's requests: the lab's own (raw-pool.ts, plain http only) or undici. */
export const httpClients = ['raw', 'undici'] as const
export type HttpClientKind = typeof httpClients[number]

export interface LabRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** Path and query, e.g. /api/v1/posts?limit=10. */
  path: string
  /** Sent as JSON. */
  body?: unknown
  /** Sent as a form (application/x-www-form-urlencoded), as a page's form posts; not with `body`. */
  form?: Record<string, string>
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string
  headers?: Record<string, string>
  /** Keep a body that is not JSON as text (e.g. /metrics); otherwise it is read and dropped. */
  readText?: boolean
  /** A 3xx answer is ok: a step of a browser's walk that succeeds by redirecting (never followed: see `location`). */
  redirectIsOk?: boolean
}

/** Why a request got no answer: counted apart in the report. */
export type TransportFailure = 'timeout' | 'connection' | 'other'

export interface LabResponse {
  /** null when no response came (see `failure`). */
  status: number | null
  failure: TransportFailure | null
  /** 2xx. */
  ok: boolean
  /** The parsed JSON body, when the response had one. */
  body: unknown
  /** A body that is not JSON, when the request asked for `readText`. */
  text?: string
  /** Seconds from a Retry-After header, when there was one. */
  retryAfterSeconds: number | null
  /** The error's code or message, for transport failures. */
  detail: string | null
  /** The Location header, when there was one (as sent: it may be relative). */
  location?: string
  /** Each Set-Cookie header, when there were any. */
  setCookies?: string[]
}

/** What a target sends through: undici (undici.ts) or the lab's own client (raw-pool.ts). */
export interface Transport {
  /** Never rejects: a request that got no response resolves with its `failure`. `owner`: sent on that owner's own connection. */
  send (request: LabRequest, owner?: number): Promise<LabResponse>
  /** Waits for requests under way, then closes the connections. */
  close (): Promise<void>
  /** Fails requests under way and closes the connections at once. */
  destroy (): Promise<void>
}
