/**
 * The lab's HTTP target: one service's URL, sent to by undici (undici.ts) or by the lab's own
 * client (raw-pool.ts): one keep-alive pool per target and thread, or a connection of its own per
 * virtual user, a timeout per request, and every failure sorted into a kind the report can count
 * (timeout, connection, other) instead of an exception.
 */
import { rawEndpoint } from './raw-request.js'
import { RawHttpPool } from './raw-pool.js'
import type { HttpClientKind, LabRequest, LabResponse, Transport } from './types.js'
import { UndiciTransport } from './undici.js'

/** The load's client when none is chosen (`--http-client`): the lab's own, as the `/healthz` probes' (plain http). Setup and scraping use undici. */
export const defaultLoadClient: HttpClientKind = 'raw'

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
