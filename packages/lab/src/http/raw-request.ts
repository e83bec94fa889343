/**
 * What the lab's own client writes: where a plain-http URL points, and a request as one string,
 * head and body, or the reason it cannot be written as given (a header that would smuggle a line,
 * a framing header the client writes itself).
 */
import { requestPayload } from './response.js'
import type { LabRequest } from './types.js'

const headerNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const badValuePattern = /[\r\n\0]/
/** Headers the client writes itself: a scenario that sets them is refused. */
const framingHeaders: ReadonlySet<string> = new Set(['host', 'content-length', 'transfer-encoding', 'connection'])
const methodsWithPayload: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH'])

export interface RawEndpoint {
  host: string
  port: number
  /** The Host header: the URL's host, port included. */
  hostHeader: string
  localAddress?: string
}

/** The endpoint of a plain-http URL; undefined for any other scheme. */
export function rawEndpoint (url: string): RawEndpoint | undefined {
  const parsed = new URL(url)
  if (parsed.protocol !== 'http:') return undefined
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname
  return { host, port: parsed.port === '' ? 80 : Number(parsed.port), hostHeader: parsed.host }
}

/** The request as written on the wire, or why it cannot be. */
export function requestText (request: LabRequest, hostHeader: string): { text: string } | { invalid: string } {
  if (!headerNamePattern.test(request.method)) return { invalid: `invalid method: ${JSON.stringify(request.method)}` }
  if (!request.path.startsWith('/') || /[\s]/.test(request.path)) return { invalid: `invalid request path: ${JSON.stringify(request.path)}` }
  const payload = requestPayload(request)
  let text = `${request.method} ${request.path} HTTP/1.1\r\nhost: ${hostHeader}\r\n`
  if (request.headers !== undefined) {
    for (const [name, value] of Object.entries(request.headers)) {
      const lower = name.toLowerCase()
      if (!headerNamePattern.test(name) || badValuePattern.test(value)) return { invalid: `invalid header: ${JSON.stringify(name)}` }
      if (framingHeaders.has(lower)) return { invalid: `the client writes the ${lower} header itself` }
      // The token and a body set these two below, as undici's client was given them.
      if ((lower === 'authorization' && request.token !== undefined) || (lower === 'content-type' && payload !== undefined)) continue
      text += `${name}: ${value}\r\n`
    }
  }
  if (request.token !== undefined) {
    if (badValuePattern.test(request.token)) return { invalid: 'invalid token: it has a line break' }
    text += `authorization: Bearer ${request.token}\r\n`
  }
  if (payload !== undefined) return { text: `${text}content-type: ${payload.contentType}\r\ncontent-length: ${Buffer.byteLength(payload.text)}\r\n\r\n${payload.text}` }
  return { text: methodsWithPayload.has(request.method) ? `${text}content-length: 0\r\n\r\n` : `${text}\r\n` }
}
