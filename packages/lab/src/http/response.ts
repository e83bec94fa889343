/**
 * What the lab makes of an answer, whichever client read it (undici.ts, raw-response.ts): the
 * status, Retry-After in seconds, Location and Set-Cookie, and the body parsed as JSON when it is
 * JSON (or kept as text when the request asked); of a request that got none, the kind of failure;
 * and a request's body as either client sends it.
 */
import type { LabRequest, LabResponse, TransportFailure } from './types.js'

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

/** A request that got no answer. */
export function failedResponse (failure: TransportFailure, detail: string): LabResponse {
  return { status: null, failure, ok: false, body: undefined, retryAfterSeconds: null, detail }
}

/** Seconds from a Retry-After value (seconds or an HTTP date); null when there is none or it does not parse. */
function parseRetryAfter (value: string | undefined): number | null {
  if (value === undefined) return null
  const seconds = Number(value)
  if (Number.isFinite(seconds) && seconds >= 0) return seconds
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, (date - Date.now()) / 1000)
}

/** Whether an answer's body is read: a JSON one, or any when the request asked for its text. */
export function keepsBody (contentType: string, readText: boolean): boolean {
  return readText || contentType.includes('application/json')
}

/** A kept body's chunks as text. */
export function bodyText (chunks: readonly Buffer[]): string {
  return chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')
}

/** The headers of an answer the lab reads, beside its status and content type. */
export interface AnswerHeaders {
  retryAfter?: string | undefined
  location?: string | undefined
  setCookies?: string[] | undefined
}

/** What the request asked of its answer's reading. */
export interface ReadingWishes {
  readText: boolean
  redirectIsOk: boolean
}

export function readingWishes (request: LabRequest): ReadingWishes {
  return { readText: request.readText === true, redirectIsOk: request.redirectIsOk === true }
}

/**
 * The lab's response: `raw`, the body as text, only when it was kept (a JSON content type, or
 * `readText`). A JSON body that does not parse makes the request a failure, with the reason.
 */
export function toLabResponse (status: number, contentType: string, headers: AnswerHeaders, raw: string | undefined, wishes: ReadingWishes): LabResponse {
  const retryAfterSeconds = parseRetryAfter(headers.retryAfter)
  const ok = (status >= 200 && status < 300) || (wishes.redirectIsOk && status >= 300 && status < 400)
  const kept = {
    ...(headers.location === undefined ? {} : { location: headers.location }),
    ...(headers.setCookies === undefined ? {} : { setCookies: headers.setCookies }),
  }
  if (raw === undefined) return { status, failure: null, ok, body: undefined, retryAfterSeconds, detail: null, ...kept }
  if (!contentType.includes('application/json')) return { status, failure: null, ok, body: undefined, ...(wishes.readText ? { text: raw } : {}), retryAfterSeconds, detail: null, ...kept }
  let body: unknown
  try {
    body = raw === '' ? undefined : JSON.parse(raw)
  } catch {
    return { status, failure: null, ok: false, body: undefined, retryAfterSeconds: null, detail: 'invalid JSON body' }
  }
  return { status, failure: null, ok, body, retryAfterSeconds, detail: null, ...kept }
}

/** A request's body as sent, with its content type: JSON, a form, or none. */
export function requestPayload (request: LabRequest): { contentType: string, text: string } | undefined {
  if (request.body !== undefined) return { contentType: 'application/json', text: JSON.stringify(request.body) }
  if (request.form !== undefined) return { contentType: 'application/x-www-form-urlencoded', text: new URLSearchParams(request.form).toString() }
  return undefined
}
