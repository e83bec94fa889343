/**
 * Reading an HTTP/1.1 answer by hand, as its bytes come: the status line, the few headers the lab
 * reads, and a body by length, in chunks, or to the connection's end. No socket here: the
 * connection (raw-connection.ts) hands over what it reads and gets the answer once it is whole.
 */
import { bodyText, keepsBody, toLabResponse, type ReadingWishes } from './response.js'
import type { LabResponse } from './types.js'

const headEnd = Buffer.from('\r\n\r\n')
const lineEnd = Buffer.from('\r\n')
/** A response head longer than this is refused (Node's own server allows 16 KiB of request head). */
const maxHeadBytes = 64 * 1024

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

/** Bytes that are not an HTTP/1.1 answer the client can trust. */
export class ProtocolError extends Error {}

/** Where `delimiter` starts in `buffer`; -1 while it may still come, a ProtocolError once `maxBytes` came without it. */
function endOf (buffer: Buffer, delimiter: Buffer, maxBytes: number, what: string): number {
  const end = buffer.indexOf(delimiter)
  if (end === -1 && buffer.length > maxBytes) throw new ProtocolError(`${what} over ${maxBytes} bytes`)
  return end
}

/** One connection's answers, read one after the other. */
export class ResponseReader {
  private wishes: ReadingWishes = { readText: false, redirectIsOk: false }
  private buffered: Buffer | undefined
  private state: ReadState = 'head'
  private remaining = 0
  private status = 0
  private contentType = ''
  private retryAfter: string | undefined
  private location: string | undefined
  private setCookies: string[] | undefined
  private keepAlive = true
  private keepBody = false
  private chunks: Buffer[] = []
  /** The server's `Keep-Alive: timeout=` of the answer being read, in ms. */
  private timeoutHintMs: number | undefined
  /** Of the last whole answer: the server keeps the connection open, and sent nothing past the answer. */
  reusable = false
  /** Of the last whole answer: the server's `Keep-Alive: timeout=`, in ms, when it gave one. */
  keepAliveHintMs: number | undefined

  /** Starts on the answer to the next request; `wishes.readText`: keep a body that is not JSON. */
  begin (wishes: ReadingWishes): void {
    this.wishes = wishes
    this.startHead()
  }

  /** The answer's body runs to the connection's end: the end completes it (`end`). */
  get readsToEnd (): boolean {
    return this.state === 'to-end'
  }

  /** Reads `chunk`; the answer once it is whole, else undefined. Throws a ProtocolError for bytes that are not HTTP/1.1. */
  read (chunk: Buffer): LabResponse | undefined {
    this.buffered = this.buffered === undefined ? chunk : Buffer.concat([this.buffered, chunk])
    return this.readBuffered()
  }

  /** The connection ended with an answer that `readsToEnd`: that answer. */
  end (): LabResponse {
    return this.complete()
  }

  /** Forgets what was read and not yet used (the connection is gone). */
  discard (): void {
    this.buffered = undefined
  }

  private startHead (): void {
    this.state = 'head'
    this.status = 0
    this.contentType = ''
    this.retryAfter = undefined
    this.location = undefined
    this.setCookies = undefined
    this.keepAlive = true
    this.keepBody = false
    this.chunks = []
    this.timeoutHintMs = undefined
  }

  /** Reads what is buffered as far as it goes: the answer once it is whole. */
  private readBuffered (): LabResponse | undefined {
    while (this.buffered !== undefined) {
      const buffer: Buffer = this.buffered
      switch (this.state) {
        case 'head': {
          const end = endOf(buffer, headEnd, maxHeadBytes, 'a head')
          if (end === -1) return undefined
          this.take(end + 4)
          if (this.readHead(buffer.toString('latin1', 0, end))) return this.complete()
          break
        }
        case 'length':
          this.bodyBytes(buffer)
          if (this.remaining === 0) return this.complete()
          break
        case 'chunk-size': {
          const end = endOf(buffer, lineEnd, 1024, 'a chunk size line')
          if (end === -1) return undefined
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
          if (buffer.length < 2) return undefined
          if (buffer[0] !== 0x0d || buffer[1] !== 0x0a) throw new ProtocolError('no line end after a chunk')
          this.take(2)
          this.state = 'chunk-size'
          break
        }
        case 'trailer': {
          const end = endOf(buffer, lineEnd, maxHeadBytes, 'a trailer line')
          if (end === -1) return undefined
          this.take(end + 2)
          if (end === 0) return this.complete()
          break
        }
        case 'to-end':
          this.body(buffer)
          this.take(buffer.length)
          break
      }
    }
    return undefined
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

  /** Reads a head and sets up the body's reading; true when the answer has no body to read. */
  private readHead (head: string): boolean {
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
    let location: string | undefined
    let setCookies: string[] | undefined
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
          case 'location':
            location ??= value
            break
          case 'set-cookie':
            (setCookies ??= []).push(value)
            break
          case 'keep-alive': {
            const timeout = /(?:^|,)\s*timeout=(\d+)/i.exec(value)
            if (timeout !== null) this.timeoutHintMs = Number(timeout[1]) * 1000
            break
          }
        }
      }
    }
    if (status >= 100 && status < 200) {
      if (status === 101) throw new ProtocolError('101: the client does not switch protocols')
      // An interim answer (100 Continue, 103 Early Hints): the real one follows.
      this.startHead()
      return false
    }
    this.status = status
    this.contentType = contentType
    this.retryAfter = retryAfter
    this.location = location
    this.setCookies = setCookies
    this.keepBody = keepsBody(contentType, this.wishes.readText)
    this.keepAlive = keepAlive
    if (status === 204 || status === 304) return true
    if (chunked) {
      this.state = 'chunk-size'
      return false
    }
    if (contentLength !== undefined) {
      this.remaining = contentLength
      this.state = 'length'
      return contentLength === 0
    }
    this.keepAlive = false
    this.state = 'to-end'
    return false
  }

  private complete (): LabResponse {
    const response = toLabResponse(this.status, this.contentType, { retryAfter: this.retryAfter, location: this.location, setCookies: this.setCookies }, this.keepBody ? bodyText(this.chunks) : undefined, this.wishes)
    // Bytes past the answer were never asked for: the connection can no longer be trusted.
    this.reusable = this.keepAlive && this.buffered === undefined
    this.keepAliveHintMs = this.timeoutHintMs
    this.startHead()
    return response
  }
}
