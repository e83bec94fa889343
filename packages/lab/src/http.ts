/**
 * The lab's HTTP client (undici): one keep-alive pool per target and thread,
 * a timeout per request, and every failure sorted into a kind the report can
 * count (timeout, connection, other) instead of an exception.
 */
import { Pool } from 'undici'
import type { TransportFailure } from './stats.js'

export interface LabRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** Path and query, e.g. /api/v1/posts?limit=10. */
  path: string
  /** Sent as JSON. */
  body?: unknown
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string
  headers?: Record<string, string>
  /** Keep a body that is not JSON as text (e.g. /metrics); otherwise it is read and dropped. */
  readText?: boolean
}

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
}

const connectionErrorCodes = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL',
  'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_DESTROYED',
])
const timeoutErrorCodes = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])

export function classifyFailure (err: unknown): TransportFailure {
  const error = err as { name?: string, code?: string, cause?: unknown }
  if (error.name === 'TimeoutError' || (error.code !== undefined && timeoutErrorCodes.has(error.code))) return 'timeout'
  if (error.code !== undefined && connectionErrorCodes.has(error.code)) return 'connection'
  if (error.cause !== undefined && error.cause !== err) return classifyFailure(error.cause)
  return 'other'
}

function parseRetryAfter (header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined) return null
  const seconds = Number(value)
  if (Number.isFinite(seconds) && seconds >= 0) return seconds
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, (date - Date.now()) / 1000)
}

/**
 * One keep-alive pool: at most `connections` requests in flight, each given up after `timeoutMs`
 * without an answer (undici's headers timeout) or without body data (its body timeout). Callers
 * open as many connections as they have requests in flight, so none waits in the pool for one.
 * No AbortSignal.timeout per request: its signal, timer and listeners were a tenth of the load
 * generator's CPU (`node --cpu-prof`, a 64-client crowd of cheap requests).
 */
export class HttpTarget {
  private readonly pool: Pool

  constructor (readonly url: string, private readonly options: { connections: number, timeoutMs: number }) {
    const { connections, timeoutMs } = options
    this.pool = new Pool(url, { connections, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: Math.min(timeoutMs, 10_000), keepAliveTimeout: 30_000 })
  }

  async send (request: LabRequest): Promise<LabResponse> {
    const headers: Record<string, string> = { ...request.headers }
    if (request.body !== undefined) headers['content-type'] = 'application/json'
    if (request.token !== undefined) headers.authorization = `Bearer ${request.token}`
    const failed = { ok: false, body: undefined, retryAfterSeconds: null } as const
    try {
      const response = await this.pool.request({
        method: request.method,
        path: request.path,
        headers,
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      })
      const status = response.statusCode
      let body: unknown
      let text: string | undefined
      if (String(response.headers['content-type'] ?? '').includes('application/json')) {
        const raw = await response.body.text()
        try {
          body = raw === '' ? undefined : JSON.parse(raw)
        } catch {
          return { ...failed, status, failure: null, detail: 'invalid JSON body' }
        }
      } else if (request.readText === true) text = await response.body.text()
      else await response.body.dump()
      const retryAfterSeconds = parseRetryAfter(response.headers['retry-after'])
      return { status, failure: null, ok: status >= 200 && status < 300, body, ...(text === undefined ? {} : { text }), retryAfterSeconds, detail: null }
    } catch (err) {
      const error = err as { code?: string, message?: string }
      return { ...failed, status: null, failure: classifyFailure(err), detail: error.code ?? error.message ?? String(err) }
    }
  }

  /** Waits for requests under way, then closes the connections. */
  async close (): Promise<void> {
    await this.pool.close()
  }

  /** Fails requests under way and closes the connections at once. */
  async destroy (): Promise<void> {
    await this.pool.destroy()
  }
}
