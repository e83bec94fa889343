/**
 * The in-flight cap, in front of Fastify: past `maxInFlight` API requests in flight, the next one
 * is refused 503 `SERVICE_OVERLOADED` by the HTTP server's own request handler. Before Fastify,
 * because its request objects, routing, hooks and serialisation would be a good part of a
 * refusal's cost; the refusal is made once, at start, and written as is.
 *
 * Which requests count, from the request line alone (the routes are Fastify's, unknown here):
 * - a path outside `/api/` never (`/healthz`, `/readyz`, `/metrics`, `/openapi.json`, ...);
 * - a POST to a route with an admission of its own (login, register ...) is counted apart and
 *   never refused;
 * - every other request under the cap, including a target Fastify reads differently from its text
 *   (a percent-escape, an absolute URL): no spelling of an API route escapes it.
 * A counted request is forgotten when its response or its connection closes (request-events.ts:
 * a pipelined request's response never closes if its connection dies first).
 *
 * A request whose body has not all come by the next turn waits outside the count (late-body.ts),
 * holding a connection, not a place: else as many slow senders as the cap would refuse every
 * capped route. It is counted again when Fastify starts serving it (`serving`), and refused then
 * if the cap is full, or a crowd that sends bodies a moment late would pass the cap. A GET that
 * announces a body is never set aside: Fastify serves it without reading the body.
 *
 * `app.inject()` calls Fastify's handler, not the server's: injected requests are never capped.
 */
import http from 'node:http'
import type { FastifyServerFactory } from 'fastify'
import { whenBodyLate } from './late-body.js'
import { whenAnswerCloses } from './request-events.js'

type RequestHandler = (request: http.IncomingMessage, response: http.ServerResponse) => void

export interface InFlightGateOptions {
  /** API requests in flight at once, at least 1; the next one is refused. */
  maxInFlight: number
  /** Paths (no query) of the POST routes with an admission of their own: counted apart, never refused. */
  ownAdmissionPaths: ReadonlySet<string>
  /** The refusal, status 503: every header it carries (Content-Length is added) and its body. */
  refusal: { headers: Readonly<Record<string, string>>, body: string }
  /** Told of each refusal. */
  onRefuse: () => void
}

const apiPrefix = '/api/'
const slash = 0x2f
/** Where a request target's path ends: Fastify's router cuts it at `?` and at `#`. */
const pathEndPattern = /[?#]/

function pathEnd (url: string): number {
  const end = url.search(pathEndPattern)
  return end === -1 ? url.length : end
}

/** An origin-form target whose path has no percent-escape: Fastify's router matches it as written. */
function matchedAsWritten (url: string): boolean {
  if (url.charCodeAt(0) !== slash) return false
  const percent = url.indexOf('%')
  return percent === -1 || percent >= pathEnd(url)
}

/** A request the gate counts, until its response or its connection closes. */
interface Counted {
  readonly request: http.IncomingMessage
  readonly ownAdmission: boolean
  /** Out of the count while its body is still coming. */
  parked: boolean
  /** Fastify has started serving it: counted to the end, whatever its body. */
  serving: boolean
  released: boolean
}

/** Methods whose body Fastify never reads (its `bodyless` methods, handle-request.js): their handlers run without it. */
const bodylessMethods: ReadonlySet<string> = new Set(['GET', 'HEAD', 'TRACE'])

/**
 * A request that announces a body Fastify will wait for: never a GET's, HEAD's or TRACE's, and
 * only with a Content-Type (handle-request.js). One Fastify serves without its body must not be
 * set aside, or it would pass the cap before `serving` counted it again.
 */
function mayHaveBody (request: http.IncomingMessage): boolean {
  if (bodylessMethods.has(request.method ?? '') || request.headers['content-type'] === undefined) return false
  const length = request.headers['content-length']
  return (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined
}

export class InFlightGate {
  readonly #maxInFlight: number
  readonly #ownAdmissionPaths: ReadonlySet<string>
  readonly #headers: Readonly<Record<string, string>>
  readonly #body: Buffer
  readonly #onRefuse: () => void
  #inFlight = 0
  #inFlightOwnAdmission = 0
  #refusing = true
  /** The capped requests that may have a body still coming, until Fastify serves them or they end. */
  readonly #mayPark = new WeakMap<http.IncomingMessage, Counted>()

  constructor (options: InFlightGateOptions) {
    if (!Number.isInteger(options.maxInFlight) || options.maxInFlight < 1) throw new TypeError(`maxInFlight must be an integer of at least 1, not ${options.maxInFlight}`)
    this.#maxInFlight = options.maxInFlight
    this.#ownAdmissionPaths = options.ownAdmissionPaths
    this.#body = Buffer.from(options.refusal.body)
    this.#headers = Object.freeze({ ...options.refusal.headers, 'content-length': String(this.#body.length) })
    this.#onRefuse = options.onRefuse
  }

  /** API requests in flight now, under the cap. */
  get inFlight (): number { return this.#inFlight }

  /** Requests in flight now on the routes with an admission of their own. */
  get inFlightOwnAdmission (): number { return this.#inFlightOwnAdmission }

  /** From now on every request goes on to Fastify (still counted): at shutdown, the app answers them itself. */
  stopRefusing (): void { this.#refusing = false }

  /** Fastify has started serving `request`: one set aside for its body is counted again if there is room (true), else refused (false). */
  serving (request: http.IncomingMessage): boolean {
    const counted = this.#mayPark.get(request)
    if (counted === undefined) return true
    this.#mayPark.delete(request)
    counted.serving = true
    if (counted.parked && !counted.released && this.#refuses()) return false
    this.#unpark(counted)
    return true
  }

  /** `handler` (Fastify's) behind the gate: what the HTTP server calls for each request. */
  guard (handler: RequestHandler): RequestHandler {
    return (request, response) => {
      if (this.#admit(request, response)) handler(request, response)
    }
  }

  /** Counts the request and returns true, or answers the refusal and returns false. */
  #admit (request: http.IncomingMessage, response: http.ServerResponse): boolean {
    const url = request.url ?? ''
    if (!url.startsWith(apiPrefix)) {
      if (matchedAsWritten(url)) return true
    } else if (request.method === 'POST' && this.#ownAdmissionPaths.has(url.slice(0, pathEnd(url)))) {
      this.#count(request, response, true)
      return true
    }
    if (this.#refuses()) {
      response.writeHead(503, this.#headers).end(this.#body)
      return false
    }
    const counted = this.#count(request, response, false)
    if (mayHaveBody(request)) {
      this.#mayPark.set(request, counted)
      whenBodyLate(request, () => { this.#park(counted) })
    }
    return true
  }

  /** Whether a request is refused now (the cap is full, and the service not stopping): such a refusal is counted. */
  #refuses (): boolean {
    if (this.#inFlight < this.#maxInFlight || !this.#refusing) return false
    this.#onRefuse()
    return true
  }

  #add (ownAdmission: boolean, delta: number): void {
    if (ownAdmission) this.#inFlightOwnAdmission += delta
    else this.#inFlight += delta
  }

  /** Counts the request until its response's `close` or its connection's, whichever comes first. */
  #count (request: http.IncomingMessage, response: http.ServerResponse, ownAdmission: boolean): Counted {
    const counted: Counted = { request, ownAdmission, parked: false, serving: false, released: false }
    this.#add(ownAdmission, 1)
    whenAnswerCloses(response, request.socket, () => {
      counted.released = true
      if (!counted.parked) this.#add(ownAdmission, -1)
    })
    return counted
  }

  /** A turn after its admission, a request whose body is still coming leaves the count until Fastify serves it. */
  #park (counted: Counted): void {
    if (counted.released || counted.serving) return
    counted.parked = true
    this.#add(counted.ownAdmission, -1)
  }

  #unpark (counted: Counted): void {
    if (counted.released || !counted.parked) return
    counted.parked = false
    this.#add(counted.ownAdmission, 1)
  }
}

/** What Fastify has filled in its options by the time it calls a server factory (fastify.js, processOptions). */
interface FilledServerOptions {
  http?: http.ServerOptions
  https?: unknown
  http2?: unknown
  keepAliveTimeout: number
  requestTimeout: number
  connectionTimeout: number
  maxRequestsPerSocket: number
}

/**
 * Fastify's `serverFactory`: the HTTP/1 server Fastify makes itself (lib/server.js,
 * getServerInstance), with `gate`, when there is one, in front of Fastify's handler, and each
 * request told to `onRequest` first (the pacer notes its connection's age). Fastify leaves its
 * server settings to a factory; they are set here as Fastify sets them, and a test compares them.
 */
export function gatedServerFactory (gate: InFlightGate | undefined, onRequest: (request: http.IncomingMessage) => void = () => {}): FastifyServerFactory {
  return (handler, options) => {
    const filled = options as unknown as FilledServerOptions
    if (filled.https || filled.http2) throw new TypeError('the in-flight gate makes a plain HTTP/1 server: tollbooth speaks plain HTTP (TLS goes in front of it)')
    const serve = gate === undefined ? handler : gate.guard(handler)
    const server = http.createServer(filled.http ?? {}, (request, response) => {
      onRequest(request)
      serve(request, response)
    })
    server.keepAliveTimeout = filled.keepAliveTimeout
    server.requestTimeout = filled.requestTimeout
    server.setTimeout(filled.connectionTimeout)
    // Fastify reads 0 as Node's default.
    if (filled.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = filled.maxRequestsPerSocket
    return server
  }
}
