/**
 * The load generator's own HTTP/1.1 client for plain-http targets: keep-alive connections
 * (raw-connection.ts) to one endpoint, each request written as one string (raw-request.ts), each
 * answer read by hand (raw-response.ts). It does what the lab needs and nothing else: no
 * redirects, no pipelining, no TLS, and one resend only, of a request whose reused connection
 * closed before any answer.
 *
 * Why not undici, which the lab uses everywhere else: the generator shares the machine's cores
 * with the service it measures, and its CPU is taken from the service's. undici's `Pool` finds a
 * free connection by walking its list of them: in an open-model crowd at 1.5 times the capacity
 * of a cheap route (about 22,000 arrivals a second, 2,000 connections, two cores) that took the
 * generator a whole core, and the lab measured its own saturation instead of the service. This
 * client took about half a core there, and in a closed loop 28 µs of generator CPU a request
 * against undici's 32 (packages/service/bench/README.md; `--http-client undici` keeps
 * undici, to compare).
 */
import { RawConnection } from './raw-connection.js'
import { requestText, type RawEndpoint } from './raw-request.js'
import { failedResponse, readingWishes } from './response.js'
import type { LabRequest, LabResponse, Transport } from './types.js'

/**
 * Keep-alive connections to one endpoint: at most `connections` at once from the shared pool, a
 * request waiting for a free one when all are busy; or an owner's own (`owned`).
 */
export class RawHttpPool implements Transport {
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
    if (this.closed) return failedResponse('connection', 'the client was closed')
    const built = requestText(request, this.endpoint.hostHeader)
    if ('invalid' in built) return failedResponse('other', built.invalid)
    const sent = owner === undefined ? this.sendPooled(built.text, request) : this.sendOn(this.ownedBy(owner), built.text, request)
    this.underWay.add(sent)
    try {
      return await sent
    } finally {
      this.underWay.delete(sent)
    }
  }

  private async sendOn (connection: RawConnection, text: string, request: LabRequest): Promise<LabResponse> {
    return await new Promise<LabResponse>((resolve) => { connection.send(text, readingWishes(request), resolve) })
  }

  private async sendPooled (text: string, request: LabRequest): Promise<LabResponse> {
    const connection = await this.take()
    if (connection === undefined) return failedResponse('connection', 'the client was closed')
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
