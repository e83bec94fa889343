/**
 * The load generator's own HTTP/1.1 client for plain-http targets: each request written as one
 * string on a keep-alive connection, each answer read by hand (status line, the few headers the
 * lab reads, a body by length, in chunks, or to the connection's end). It does what the lab
 * needs and nothing else: no redirects, no pipelining, no TLS, and one resend only, of a request
 * whose reused connection closed before any answer (`RawConnection.write`).
 *
 * Why not undici, which the lab uses everywhere else: the generator shares the machine's cores
 * with the service it measures, and its CPU is taken from the service's. undici's `Pool` finds a
 * free connection by walking its list of them: in an open-model crowd at 1.5 times the capacity
 * of a cheap route (about 22,000 arrivals a second, 2,000 connections, two cores) that took the
 * generator a whole core, and the lab measured its own saturation instead of the service. This
 * client took about half a core there, and in a closed loop 28 µs of generator CPU a request
 * against undici's 32 (bench/README, "The lab's own HTTP client"; `--http-client undici` keeps
 * undici, to compare).
 *
 * A request is given up, as a timeout, when its connection has been silent for `timeoutMs`
 * (nothing written or read: the socket's inactivity timer, which Node refreshes on I/O), so a
 * server that trickles its answer is waited for as undici's body timeout would.
 */
import net from 'node:net'
import type { LabRequest, LabResponse } from './http.js'
import { bodyText, classifyFailure, keepsBody, toLabResponse } from './response.js'
import type { TransportFailure } from './stats.js'

const headEnd = Buffer.from('\r\n\r\n')
const lineEnd = Buffer.from('\r\n')
/** A response head longer than this is refused (Node's own server allows 16 KiB of request head). */
const maxHeadBytes = 64 * 1024
const headerNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const badValuePattern = /[\r\n\0]/
/** Headers the client writes itself: a scenario that sets them is refused. */
const framingHeaders: ReadonlySet<string> = new Set(['host', 'content-length', 'transfer-encoding', 'connection'])
const methodsWithPayload: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH'])
/** How long a connection waits for its TCP connection at most, as undici's connect timeout (a connection failure past it). */
const maxConnectMs = 10_000
/** A connection idle longer than this is not reused (undici's keepAliveTimeout as the lab set it). */
const maxIdleMs = 30_000
/** Taken off a server's `Keep-Alive: timeout=N` before reusing a connection near its end (undici's threshold). */
const keepAliveMarginMs = 2_000

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
  let text = `${request.method} ${request.path} HTTP/1.1\r\nhost: ${hostHeader}\r\n`
  if (request.headers !== undefined) {
    for (const [name, value] of Object.entries(request.headers)) {
      const lower = name.toLowerCase()
      if (!headerNamePattern.test(name) || badValuePattern.test(value)) return { invalid: `invalid header: ${JSON.stringify(name)}` }
      if (framingHeaders.has(lower)) return { invalid: `the client writes the ${lower} header itself` }
      // The token and a JSON body set these two below, as undici's client was given them.
      if ((lower === 'authorization' && request.token !== undefined) || (lower === 'content-type' && request.body !== undefined)) continue
      text += `${name}: ${value}\r\n`
    }
  }
  if (request.token !== undefined) {
    if (badValuePattern.test(request.token)) return { invalid: 'invalid token: it has a line break' }
    text += `authorization: Bearer ${request.token}\r\n`
  }
  if (request.body !== undefined) {
    const json = JSON.stringify(request.body)
    return { text: `${text}content-type: application/json\r\ncontent-length: ${Buffer.byteLength(json)}\r\n\r\n${json}` }
  }
  return { text: methodsWithPayload.has(request.method) ? `${text}content-length: 0\r\n\r\n` : `${text}\r\n` }
}

type Resolve = (response: LabResponse) => void

function failed (failure: TransportFailure, detail: string): LabResponse {
  return { status: null, failure, ok: false, body: undefined, retryAfterSeconds: null, detail }
}

/** Where the reading of an answer is. */
type ReadState =
  | 'head'
  /** `remaining` bytes of body left. */
  | 'length'
  /** A chunk's size line next. */
  | 'chunk-size'
  /** `remaining` bytes of the chunk, then its CRLF. */
  | 'chunk-data'
  /** Trailer lines, up to an empty one. */
  | 'trailer'
  /** The body runs to the connection's end. */
  | 'to-end'

class ProtocolError extends Error {}

/** Where `delimiter` starts in `buffer`; -1 while it may still come, a ProtocolError once `maxBytes` came without it. */
function endOf (buffer: Buffer, delimiter: Buffer, maxBytes: number, what: string): number {
  const end = buffer.indexOf(delimiter)
  if (end === -1 && buffer.length > maxBytes) throw new ProtocolError(`${what} over ${maxBytes} bytes`)
  return end
}

/**
 * One keep-alive connection, one request at a time. Connected at its first request and again
 * after the server closed it; its socket's inactivity timer is the request's timeout.
 */
export class RawConnection {
  private socket: net.Socket | undefined
  private resolve: Resolve | undefined
  private readText = false
  private buffered: Buffer | undefined
  private state: ReadState = 'head'
  private remaining = 0
  private status = 0
  private contentType = ''
  private retryAfter: string | undefined
  private keepAlive = true
  private keepBody = false
  private chunks: Buffer[] = []
  /** The server's `Keep-Alive: timeout=` of the answer being read, in ms. */
  private keepAliveHintMs: number | undefined
  /** The request under way, as written: written again, once, on a fresh connection (see `write`). */
  private text = ''
  private retried = false
  /** The request under way went on a connection that had answered before. */
  private reused = false
  /** A byte of the answer to the request under way has come. */
  private answered = false
  /** performance.now() past which the idle connection is not reused. */
  private idleUntil = 0
  /** Requests sent while one was under way (an owner's requests at once): written in turn. */
  private readonly queue: Array<{ text: string, readText: boolean, resolve: Resolve }> = []

  constructor (private readonly endpoint: RawEndpoint, private readonly timeoutMs: number) {}

  /** Writes `text` once the requests before it are answered, and resolves with its answer or failure; never rejects. */
  send (text: string, readText: boolean, resolve: Resolve): void {
    if (this.resolve !== undefined) {
      this.queue.push({ text, readText, resolve })
      return
    }
    this.resolve = resolve
    this.readText = readText
    this.text = text
    this.retried = false
    this.write()
  }

  /** Fails the request under way and those waiting, and closes the connection. */
  destroy (detail = 'the client was closed'): void {
    for (const waiting of this.queue.splice(0)) waiting.resolve(failed('connection', detail))
    this.drop()
    this.finish(failed('connection', detail))
  }

  /**
   * Writes the request under way. Not on a connection the server has ended (its close not seen
   * yet), nor on one idle past the server's keep-alive timeout (less a margin) or `maxIdleMs`:
   * on a new one. A request on a reused connection that closes before any byte of the answer
   * comes is written again, once, on a new connection: the server closed an idle connection as
   * the request went out, and never read it (browsers resend so too).
   */
  private write (): void {
    this.startHead()
    this.answered = false
    if (this.socket !== undefined && (!this.socket.writable || performance.now() > this.idleUntil)) this.drop()
    this.reused = this.socket !== undefined
    this.socket ??= this.connect()
    // Before the connection is up, the socket keeps what is written and sends it once connected.
    this.socket.write(this.text)
  }

  private connect (): net.Socket {
    const { host, port, localAddress } = this.endpoint
    const socket = net.connect({ host, port, ...(localAddress === undefined ? {} : { localAddress }), noDelay: true })
    socket.setTimeout(Math.min(this.timeoutMs, maxConnectMs))
    socket.once('connect', () => { socket.setTimeout(this.timeoutMs) })
    let error: Error | undefined
    socket.on('data', (chunk: Buffer) => { this.onData(socket, chunk) })
    socket.on('timeout', () => {
      if (this.socket !== socket || this.resolve === undefined) return
      // Dropped first: `finish` may write the next request waiting, on a connection of its own.
      this.drop()
      // Not connected yet: a connection failure, as undici's connect timeout is.
      this.finish(socket.connecting ? failed('connection', 'UND_ERR_CONNECT_TIMEOUT') : failed('timeout', `no answer for ${this.timeoutMs} ms`))
    })
    socket.on('error', (err: Error) => { error = err })
    socket.on('close', () => {
      if (this.socket !== socket) return
      this.socket = undefined
      if (this.resolve === undefined) return
      if (this.state === 'to-end' && error === undefined) {
        this.complete()
        return
      }
      if (this.reused && !this.answered && !this.retried) {
        this.retried = true
        this.write()
        return
      }
      const code = (error as { code?: string } | undefined)?.code
      this.finish(error === undefined ? failed('connection', 'other side closed') : failed(classifyFailure(error), code ?? error.message))
    })
    return socket
  }

  private drop (): void {
    const socket = this.socket
    this.socket = undefined
    this.buffered = undefined
    socket?.destroy()
  }

  private startHead (): void {
    this.state = 'head'
    this.status = 0
    this.contentType = ''
    this.retryAfter = undefined
    this.keepAlive = true
    this.keepBody = false
    this.chunks = []
    this.keepAliveHintMs = undefined
  }

  private onData (socket: net.Socket, chunk: Buffer): void {
    if (this.socket !== socket) return
    if (this.resolve === undefined) {
      // Bytes nobody asked for: the connection can no longer be trusted.
      this.drop()
      return
    }
    this.answered = true
    this.buffered = this.buffered === undefined ? chunk : Buffer.concat([this.buffered, chunk])
    try {
      this.read()
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err
      this.drop()
      this.finish(failed('other', `invalid HTTP response: ${err.message}`))
    }
  }

  /** Reads what is buffered as far as it goes. */
  private read (): void {
    while (this.buffered !== undefined && this.resolve !== undefined) {
      const buffer: Buffer = this.buffered
      switch (this.state) {
        case 'head': {
          const end = endOf(buffer, headEnd, maxHeadBytes, 'a head')
          if (end === -1) return
          this.take(end + 4)
          this.readHead(buffer.toString('latin1', 0, end))
          break
        }
        case 'length':
          this.bodyBytes(buffer)
          if (this.remaining === 0) this.complete()
          break
        case 'chunk-size': {
          const end = endOf(buffer, lineEnd, 1024, 'a chunk size line')
          if (end === -1) return
          const sizeText = buffer.toString('latin1', 0, end).split(';')[0]!.trim()
          if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText)) throw new ProtocolError(`chunk size ${JSON.stringify(sizeText)}`)
          this.take(end + 2)
          this.remaining = Number.parseInt(sizeText, 16)
          this.state = this.remaining === 0 ? 'trailer' : 'chunk-data'
          break
        }
        case 'chunk-data': {
          if (this.remaining > 0) {
            this.bodyBytes(buffer)
            break
          }
          if (buffer.length < 2) return
          if (buffer[0] !== 0x0d || buffer[1] !== 0x0a) throw new ProtocolError('no line end after a chunk')
          this.take(2)
          this.state = 'chunk-size'
          break
        }
        case 'trailer': {
          const end = endOf(buffer, lineEnd, maxHeadBytes, 'a trailer line')
          if (end === -1) return
          this.take(end + 2)
          if (end === 0) this.complete()
          break
        }
        case 'to-end':
          this.body(buffer)
          this.take(buffer.length)
          break
      }
    }
  }

  /** Drops the first `n` buffered bytes. */
  private take (n: number): void {
    const buffer = this.buffered
    if (buffer === undefined) return
    this.buffered = n >= buffer.length ? undefined : buffer.subarray(n)
  }

  private body (bytes: Buffer): void {
    if (this.keepBody && bytes.length > 0) this.chunks.push(bytes)
  }

  /** Reads up to `remaining` bytes of body from the front of `buffer` (the buffered bytes). */
  private bodyBytes (buffer: Buffer): void {
    const n = Math.min(this.remaining, buffer.length)
    this.body(buffer.subarray(0, n))
    this.take(n)
    this.remaining -= n
  }

  private readHead (head: string): void {
    const firstLineEnd = head.indexOf('\r\n')
    const statusLine = firstLineEnd === -1 ? head : head.slice(0, firstLineEnd)
    const match = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(statusLine)
    if (match === null) throw new ProtocolError(`status line ${JSON.stringify(statusLine.slice(0, 80))}`)
    const status = Number(match[2])
    let keepAlive = match[1] === '1'
    let contentLength: number | undefined
    let chunked = false
    let contentType = ''
    let retryAfter: string | undefined
    if (firstLineEnd !== -1) {
      for (const line of head.slice(firstLineEnd + 2).split('\r\n')) {
        const colon = line.indexOf(':')
        if (colon <= 0) throw new ProtocolError(`header line ${JSON.stringify(line.slice(0, 80))}`)
        const name = line.slice(0, colon).trim().toLowerCase()
        const value = line.slice(colon + 1).trim()
        switch (name) {
          case 'content-length': {
            if (!/^\d{1,15}$/.test(value)) throw new ProtocolError(`content-length ${JSON.stringify(value)}`)
            const length = Number(value)
            if (contentLength !== undefined && contentLength !== length) throw new ProtocolError('two content-lengths')
            contentLength = length
            break
          }
          case 'transfer-encoding': {
            const codings = value.toLowerCase().split(',').map((coding) => coding.trim())
            chunked = codings[codings.length - 1] === 'chunked'
            if (!chunked) keepAlive = false
            break
          }
          case 'connection': {
            const options = value.toLowerCase().split(',').map((option) => option.trim())
            if (options.includes('close')) keepAlive = false
            else if (options.includes('keep-alive')) keepAlive = true
            break
          }
          case 'content-type':
            contentType = value
            break
          case 'retry-after':
            retryAfter ??= value
            break
          case 'keep-alive': {
            const timeout = /(?:^|,)\s*timeout=(\d+)/i.exec(value)
            if (timeout !== null) this.keepAliveHintMs = Number(timeout[1]) * 1000
            break
          }
        }
      }
    }
    if (status >= 100 && status < 200) {
      if (status === 101) throw new ProtocolError('101: the client does not switch protocols')
      // An interim answer (100 Continue, 103 Early Hints): the real one follows.
      this.startHead()
      return
    }
    this.status = status
    this.contentType = contentType
    this.retryAfter = retryAfter
    this.keepBody = keepsBody(contentType, this.readText)
    this.keepAlive = keepAlive
    if (status === 204 || status === 304) {
      this.complete()
    } else if (chunked) {
      this.state = 'chunk-size'
    } else if (contentLength !== undefined) {
      this.remaining = contentLength
      this.state = 'length'
      if (contentLength === 0) this.complete()
    } else {
      this.keepAlive = false
      this.state = 'to-end'
    }
  }

  private complete (): void {
    const response = toLabResponse(this.status, this.contentType, this.retryAfter, this.keepBody ? bodyText(this.chunks) : undefined, this.readText)
    const idleMs = Math.min(maxIdleMs, this.keepAliveHintMs === undefined ? maxIdleMs : this.keepAliveHintMs - keepAliveMarginMs)
    // Bytes past the answer were never asked for: the connection can no longer be trusted.
    const keepAlive = this.keepAlive && this.buffered === undefined && idleMs > 0
    this.idleUntil = performance.now() + idleMs
    this.startHead()
    if (!keepAlive) this.drop()
    this.finish(response)
  }

  private finish (response: LabResponse): void {
    const resolve = this.resolve
    if (resolve === undefined) return
    this.resolve = undefined
    resolve(response)
    const next = this.queue.shift()
    if (next !== undefined) this.send(next.text, next.readText, next.resolve)
  }
}

/**
 * Keep-alive connections to one endpoint: at most `connections` at once from the shared pool, a
 * request waiting for a free one when all are busy; or an owner's own (`owned`).
 */
export class RawHttpPool {
  private readonly idle: RawConnection[] = []
  /** Every connection of the shared pool, idle or not. */
  private readonly pooled: RawConnection[] = []
  /** Requests waiting for a pool connection; given undefined when the pool is destroyed. */
  private readonly waiting: Array<(connection: RawConnection | undefined) => void> = []
  private readonly owned = new Map<number, RawConnection>()
  private readonly underWay = new Set<Promise<LabResponse>>()
  private closed = false

  /** `localAddressOf(owner)`: where an owner's connection comes from; undefined: the system's choice. */
  constructor (private readonly endpoint: RawEndpoint, private readonly options: { connections: number, timeoutMs: number, localAddressOf?: (owner: number) => string | undefined }) {}

  /** Never rejects. `owner`: on that owner's own connection. */
  async send (request: LabRequest, owner?: number): Promise<LabResponse> {
    if (this.closed) return failed('connection', 'the client was closed')
    const built = requestText(request, this.endpoint.hostHeader)
    if ('invalid' in built) return failed('other', built.invalid)
    const sent = owner === undefined ? this.sendPooled(built.text, request) : this.sendOn(this.ownedBy(owner), built.text, request)
    this.underWay.add(sent)
    try {
      return await sent
    } finally {
      this.underWay.delete(sent)
    }
  }

  private async sendOn (connection: RawConnection, text: string, request: LabRequest): Promise<LabResponse> {
    return await new Promise<LabResponse>((resolve) => { connection.send(text, request.readText === true, resolve) })
  }

  private async sendPooled (text: string, request: LabRequest): Promise<LabResponse> {
    const connection = await this.take()
    if (connection === undefined) return failed('connection', 'the client was closed')
    try {
      return await this.sendOn(connection, text, request)
    } finally {
      this.giveBack(connection)
    }
  }

  private ownedBy (owner: number): RawConnection {
    let connection = this.owned.get(owner)
    if (connection === undefined) {
      const localAddress = this.options.localAddressOf?.(owner)
      this.owned.set(owner, connection = new RawConnection(localAddress === undefined ? this.endpoint : { ...this.endpoint, localAddress }, this.options.timeoutMs))
    }
    return connection
  }

  private async take (): Promise<RawConnection | undefined> {
    const free = this.idle.pop()
    if (free !== undefined) return free
    if (this.pooled.length < this.options.connections) {
      const connection = new RawConnection(this.endpoint, this.options.timeoutMs)
      this.pooled.push(connection)
      return connection
    }
    return await new Promise<RawConnection | undefined>((resolve) => { this.waiting.push(resolve) })
  }

  private giveBack (connection: RawConnection): void {
    const next = this.waiting.shift()
    if (next !== undefined) next(connection)
    else this.idle.push(connection)
  }

  /** Waits for requests under way, then closes the connections; requests sent after fail. */
  async close (): Promise<void> {
    this.closed = true
    await Promise.all(this.underWay)
    for (const connection of [...this.pooled, ...this.owned.values()]) connection.destroy()
  }

  /** Fails requests under way and closes the connections at once. */
  async destroy (): Promise<void> {
    this.closed = true
    for (const resolve of this.waiting.splice(0)) resolve(undefined)
    for (const connection of [...this.pooled, ...this.owned.values()]) connection.destroy()
    await Promise.all(this.underWay)
  }
}
