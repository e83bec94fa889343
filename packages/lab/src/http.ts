/**
 * The lab's HTTP client (undici): one keep-alive pool per target and thread, or a connection of
 * its own per virtual user, a timeout per request, and every failure sorted into a kind the
 * report can count (timeout, connection, other) instead of an exception.
 */
import { Client, Pool, type Dispatcher } from 'undici'
import { RawHttpPool, rawEndpoint } from './raw-http.js'
import { bodyText, classifyFailure, keepsBody, toLabResponse } from './response.js'
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

/**
 * Source addresses at most: 127.1.0.1 to 127.1.39.16 (`loopbackSourceAddresses`). A connection
 * from a given address takes its port when it binds, before it connects, from a share of the
 * ephemeral range that every other connection of the machine (to PostgreSQL, the prober's) then
 * skips: about 14,000 of them at once with Linux's default range. One user, one connection.
 */
export const maxSourceAddresses = 10_000

/**
 * `count` loopback addresses for a closed model's users to connect from (127.1.0.1, 127.1.0.2,
 * ...; all of 127.0.0.0/8 is the loopback interface's on Linux, no setup needed), so the service
 * sees as many clients' addresses as a crowd from as many machines would show it; [] for 1. Only
 * for a target on an IPv4 loopback address: a loopback source cannot reach another host.
 */
export function loopbackSourceAddresses (url: string, count: number): string[] {
  if (!Number.isInteger(count) || count < 1 || count > maxSourceAddresses) throw new RangeError(`source addresses must be a whole number from 1 to ${maxSourceAddresses}, not ${count}`)
  if (count === 1) return []
  const { hostname } = new URL(url)
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)) throw new RangeError(`several source addresses need a target on an IPv4 loopback address (127.x.y.z), not ${hostname}: they are loopback addresses`)
  return Array.from({ length: count }, (_, k) => `127.1.${(k + 1) >> 8}.${(k + 1) & 255}`)
}

/**
 * One response, collected by undici's low-level dispatch handler: the status, the two headers the
 * lab reads (found in the raw header list, no header object built) and the body's chunks when it
 * is kept. `undici.request()` costs more per request for what the lab does not use: a Readable
 * body stream, an async resource, and every header parsed into an object (in `node --cpu-prof` of
 * a closed-loop crowd of cheap requests, one run each: 172.5 µs of generator thread per request
 * with it, 146.5 with this).
 */
class ResponseCollector implements Dispatcher.DispatchHandler {
  private status = 0
  private retryAfter: string | undefined
  private readonly chunks: Buffer[] = []
  private contentType = ''
  private keepBody = false

  constructor (private readonly readText: boolean, private readonly resolve: (response: LabResponse) => void) {}

  onConnect (): void {}

  onHeaders (statusCode: number, rawHeaders: Buffer[]): boolean {
    this.status = statusCode
    let contentType = ''
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i]
      const value = rawHeaders[i + 1]
      if (name === undefined || value === undefined) continue
      // Only names of the right length are decoded and compared.
      if (name.length === 12 && name.toString('latin1').toLowerCase() === 'content-type') contentType = value.toString('latin1')
      else if (name.length === 11 && name.toString('latin1').toLowerCase() === 'retry-after') this.retryAfter ??= value.toString('latin1')
    }
    this.contentType = contentType
    this.keepBody = keepsBody(contentType, this.readText)
    return true
  }

  onData (chunk: Buffer): boolean {
    if (this.keepBody) this.chunks.push(chunk)
    return true
  }

  onComplete (): void {
    this.resolve(toLabResponse(this.status, this.contentType, this.retryAfter, this.keepBody ? bodyText(this.chunks) : undefined, this.readText))
  }

  onError (err: Error): void {
    const error = err as { code?: string, message?: string }
    this.resolve({ status: null, failure: classifyFailure(err), ok: false, body: undefined, retryAfterSeconds: null, detail: error.code ?? error.message ?? String(err) })
  }
}

/** Which HTTP client sends a target's requests: the lab's own (raw-http.ts, plain http only) or undici. */
export const httpClients = ['raw', 'undici'] as const
export type HttpClientKind = typeof httpClients[number]
/** The load's client when none is chosen (`--http-client`): the lab's own. Setup, probes and scraping use undici. */
export const defaultLoadClient: HttpClientKind = 'raw'

interface Transport {
  send (request: LabRequest, owner?: number): Promise<LabResponse>
  close (): Promise<void>
  destroy (): Promise<void>
}

/**
 * One keep-alive pool: at most `connections` requests in flight, each given up after `timeoutMs`
 * without an answer (undici's headers timeout) or without body data (its body timeout). Callers
 * open as many connections as they have requests in flight, so none waits in the pool for one.
 * No AbortSignal.timeout per request: its signal, timer and listeners were a tenth of the load
 * generator's CPU (`node --cpu-prof`, a 64-client crowd of cheap requests).
 *
 * A request sent with an `owner` (a closed model's virtual user) goes on that owner's own
 * keep-alive connection instead, as a browser's or a k6 VU's does. From the pool, a connection
 * passed from user to user, and the service, which knows a client by its connection, took each
 * user for the one before it: a login was held for another user's early return (pacing.ts; in
 * the stress scenario, the logins' 503s waited 0.9 s at the median).
 */
export class HttpTarget {
  private readonly transport: Transport

  /**
   * `sourceAddresses`: owners' connections come from these local addresses, owner k's from the
   * k-th (mod their number), as clients from as many machines would; empty: the system's choice.
   * `client`: `raw` sends with the lab's own client when the URL is plain http (undici for any
   * other); `undici` (the default) with undici.
   */
  constructor (readonly url: string, options: { connections: number, timeoutMs: number, sourceAddresses?: readonly string[], client?: HttpClientKind }) {
    const sourceAddresses = options.sourceAddresses ?? []
    const localAddressOf = (owner: number): string | undefined => sourceAddresses.length === 0 ? undefined : sourceAddresses[owner % sourceAddresses.length]
    const endpoint = options.client === 'raw' ? rawEndpoint(url) : undefined
    this.transport = endpoint === undefined
      ? new UndiciTransport(url, options.connections, options.timeoutMs, localAddressOf)
      : new RawHttpPool(endpoint, { connections: options.connections, timeoutMs: options.timeoutMs, localAddressOf })
  }

  /** Never rejects: a request that got no response resolves with its `failure`. `owner`: sent on that owner's own connection. */
  async send (request: LabRequest, owner?: number): Promise<LabResponse> {
    return await this.transport.send(request, owner)
  }

  /** Waits for requests under way, then closes the connections. */
  async close (): Promise<void> {
    await this.transport.close()
  }

  /** Fails requests under way and closes the connections at once. */
  async destroy (): Promise<void> {
    await this.transport.destroy()
  }
}

/** undici: a Pool for requests without an owner, a Client of its own for each owner. */
class UndiciTransport implements Transport {
  private readonly pool: Pool
  private readonly clientOptions: Client.Options
  private readonly owned = new Map<number, Client>()

  constructor (private readonly url: string, connections: number, timeoutMs: number, private readonly localAddressOf: (owner: number) => string | undefined) {
    this.clientOptions = { pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: Math.min(timeoutMs, 10_000), keepAliveTimeout: 30_000 }
    this.pool = new Pool(url, { ...this.clientOptions, connections })
  }

  private dispatcher (owner: number | undefined): Dispatcher {
    if (owner === undefined) return this.pool
    let client = this.owned.get(owner)
    if (client === undefined) {
      const localAddress = this.localAddressOf(owner)
      this.owned.set(owner, client = new Client(this.url, localAddress === undefined ? this.clientOptions : { ...this.clientOptions, localAddress }))
    }
    return client
  }

  /** Never rejects: a request that got no response resolves with its `failure`. `owner`: sent on that owner's own connection. */
  async send (request: LabRequest, owner?: number): Promise<LabResponse> {
    const headers: Record<string, string> = request.headers === undefined ? {} : { ...request.headers }
    if (request.body !== undefined) headers['content-type'] = 'application/json'
    if (request.token !== undefined) headers.authorization = `Bearer ${request.token}`
    const options: Dispatcher.DispatchOptions = {
      method: request.method,
      path: request.path,
      headers,
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
    }
    return await new Promise<LabResponse>((resolve) => {
      // dispatch() reports its own synchronous failures (a closed pool, bad options) to onError.
      this.dispatcher(owner).dispatch(options, new ResponseCollector(request.readText === true, resolve))
    })
  }

  /** Waits for requests under way, then closes the connections. */
  async close (): Promise<void> {
    await Promise.all([this.pool, ...this.owned.values()].map(async (dispatcher) => { await dispatcher.close() }))
  }

  /** Fails requests under way and closes the connections at once. */
  async destroy (): Promise<void> {
    await Promise.all([this.pool, ...this.owned.values()].map(async (dispatcher) => { await dispatcher.destroy() }))
  }
}
