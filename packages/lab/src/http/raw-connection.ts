/**
 * One keep-alive connection of the lab's own client, one request at a time: it connects at its
 * first request and again after the server closed it, writes each request as one string, hands
 * what it reads to a ResponseReader (raw-response.ts), and resends once, on a new connection, a
 * request whose reused connection closed before any answer.
 *
 * A request is given up, as a timeout, when its connection has been silent for `timeoutMs`
 * (nothing written or read: the socket's inactivity timer, which Node refreshes on I/O), so a
 * server that trickles its answer is waited for as undici's body timeout would.
 */
import net from 'node:net'
import type { RawEndpoint } from './raw-request.js'
import { ProtocolError, ResponseReader } from './raw-response.js'
import { classifyFailure, failedResponse, type ReadingWishes } from './response.js'
import type { LabResponse } from './types.js'

/** How long a connection waits for its TCP connection at most, as undici's connect timeout (a connection failure past it). */
const maxConnectMs = 10_000
/** A connection idle longer than this is not reused (undici's keepAliveTimeout as the lab set it). */
const maxIdleMs = 30_000
/** Taken off a server's `Keep-Alive: timeout=N` before reusing a connection near its end (undici's threshold). */
const keepAliveMarginMs = 2_000

export type Resolve = (response: LabResponse) => void

export class RawConnection {
  private socket: net.Socket | undefined
  private readonly reader = new ResponseReader()
  private resolve: Resolve | undefined
  private wishes: ReadingWishes = { readText: false, redirectIsOk: false }
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
  private readonly queue: Array<{ text: string, wishes: ReadingWishes, resolve: Resolve }> = []

  constructor (private readonly endpoint: RawEndpoint, private readonly timeoutMs: number) {}

  /** Writes `text` once the requests before it are answered, and resolves with its answer or failure; never rejects. */
  send (text: string, wishes: ReadingWishes, resolve: Resolve): void {
    if (this.resolve !== undefined) {
      this.queue.push({ text, wishes, resolve })
      return
    }
    this.resolve = resolve
    this.wishes = wishes
    this.text = text
    this.retried = false
    this.write()
  }

  /** Fails the request under way and those waiting, and closes the connection. */
  destroy (detail = 'the client was closed'): void {
    for (const waiting of this.queue.splice(0)) waiting.resolve(failedResponse('connection', detail))
    this.drop()
    this.finish(failedResponse('connection', detail))
  }

  /**
   * Writes the request under way. Not on a connection the server has ended (its close not seen
   * yet), nor on one idle past the server's keep-alive timeout (less a margin) or `maxIdleMs`:
   * on a new one. A request on a reused connection that closes before any byte of the answer
   * comes is written again, once, on a new connection: the server closed an idle connection as
   * the request went out, and never read it (browsers resend so too).
   */
  private write (): void {
    this.reader.begin(this.wishes)
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
      this.finish(socket.connecting ? failedResponse('connection', 'UND_ERR_CONNECT_TIMEOUT') : failedResponse('timeout', `no answer for ${this.timeoutMs} ms`))
    })
    socket.on('error', (err: Error) => { error = err })
    socket.on('close', () => {
      if (this.socket !== socket) return
      this.socket = undefined
      if (this.resolve === undefined) return
      if (this.reader.readsToEnd && error === undefined) {
        this.completed(this.reader.end())
        return
      }
      if (this.reused && !this.answered && !this.retried) {
        this.retried = true
        this.write()
        return
      }
      const code = (error as { code?: string } | undefined)?.code
      this.finish(error === undefined ? failedResponse('connection', 'other side closed') : failedResponse(classifyFailure(error), code ?? error.message))
    })
    return socket
  }

  private drop (): void {
    const socket = this.socket
    this.socket = undefined
    this.reader.discard()
    socket?.destroy()
  }

  private onData (socket: net.Socket, chunk: Buffer): void {
    if (this.socket !== socket) return
    if (this.resolve === undefined) {
      // Bytes nobody asked for: the connection can no longer be trusted.
      this.drop()
      return
    }
    this.answered = true
    let response: LabResponse | undefined
    try {
      response = this.reader.read(chunk)
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err
      this.drop()
      this.finish(failedResponse('other', `invalid HTTP response: ${err.message}`))
      return
    }
    if (response !== undefined) this.completed(response)
  }

  /** A whole answer: the connection is kept for the next request unless the answer or its age says not to. */
  private completed (response: LabResponse): void {
    const hintMs = this.reader.keepAliveHintMs
    const idleMs = Math.min(maxIdleMs, hintMs === undefined ? maxIdleMs : hintMs - keepAliveMarginMs)
    this.idleUntil = performance.now() + idleMs
    if (!this.reader.reusable || idleMs <= 0) this.drop()
    this.finish(response)
  }

  private finish (response: LabResponse): void {
    const resolve = this.resolve
    if (resolve === undefined) return
    this.resolve = undefined
    resolve(response)
    const next = this.queue.shift()
    if (next !== undefined) this.send(next.text, next.wishes, next.resolve)
  }
}
