/**
 * HTTP/1.1 spoken by hand over a socket: for what a fetch client will not send (malformed or
 * pipelined requests, unusual request targets, a body that never comes).
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: any
}

/** The responses in `raw`, in order; a JSON body parsed. */
export function parseResponses (raw: string): RawResponse[] {
  const responses: RawResponse[] = []
  let rest = raw
  while (rest.startsWith('HTTP/1.1 ')) {
    const headEnd = rest.indexOf('\r\n\r\n')
    const [statusLine, ...headerLines] = rest.slice(0, headEnd).split('\r\n')
    const headers: Record<string, string> = {}
    for (const line of headerLines) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
    }
    const length = Number(headers['content-length'] ?? 0)
    const text = rest.slice(headEnd + 4, headEnd + 4 + length)
    responses.push({ status: Number(statusLine?.split(' ')[1]), headers, body: text.length > 0 ? JSON.parse(text) : undefined })
    rest = rest.slice(headEnd + 4 + length)
  }
  return responses
}

export interface RawConnection {
  socket: net.Socket
  /** Everything received so far. */
  received: () => string
  /** Resolves when the connection is closed. */
  closed: Promise<void>
}

/** A connection to the service at `url` (http://127.0.0.1:port) that keeps what it receives. */
export function rawConnection (url: string): RawConnection {
  const { port } = new URL(url)
  const socket = net.connect(Number(port), '127.0.0.1')
  let received = ''
  socket.on('data', (chunk: Buffer) => { received += chunk.toString('latin1') })
  socket.on('error', () => {})
  const closed = new Promise<void>((resolve) => socket.once('close', () => { resolve() }))
  return { socket, received: () => received, closed }
}

/** Writes raw bytes on a fresh connection and returns what came back before the server closed it. */
export async function rawExchange (url: string, bytes: string): Promise<RawResponse> {
  const connection = rawConnection(url)
  connection.socket.write(bytes)
  await connection.closed
  const [response] = parseResponses(connection.received())
  assert.ok(response !== undefined, `a response: ${JSON.stringify(connection.received())}`)
  return response
}

export interface NodeResponse {
  status: number
  headers: http.IncomingHttpHeaders
  body: any
}

/** node:http, which sends any method its parser knows and any request target, an absolute URL included (fetch refuses some methods, and normalises case). */
export async function nodeRequest (url: string, method: string, path: string, options: { headers?: Record<string, string>, body?: string } = {}): Promise<NodeResponse> {
  const { port } = new URL(url)
  return await new Promise((resolve, reject) => {
    const outgoing = http.request({ host: '127.0.0.1', port: Number(port), method, path, headers: options.headers, agent: false }, (incoming) => {
      let text = ''
      incoming.setEncoding('utf8')
      incoming.on('data', (chunk: string) => { text += chunk })
      incoming.on('end', () => { resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body: text.length > 0 ? JSON.parse(text) : undefined }) })
    })
    outgoing.on('error', reject)
    outgoing.end(options.body)
  })
}
