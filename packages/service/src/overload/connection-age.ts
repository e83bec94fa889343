/**
 * When each connection's first request came, which tells the pacer (pacing.ts) a new client from a
 * known one. Noted for every route by the HTTP server's handler, so a login after reads on a
 * keep-alive connection is not a stranger's, and aging a connection first costs the wait it saves.
 */
import type http from 'node:http'
import type net from 'node:net'

export class ConnectionAges {
  /** Connection -> when its first request came; a number, so no request is kept. */
  readonly #firstRequestAt = new WeakMap<net.Socket, number>()

  /** `now`: milliseconds on a monotonic clock (the pacer's). */
  constructor (private readonly now: () => number) {}

  /** Notes the time of `request`'s connection's first request, if this is it. */
  note (request: http.IncomingMessage): void {
    if (!this.#firstRequestAt.has(request.socket)) this.#firstRequestAt.set(request.socket, this.now())
  }

  /** Ms since the first request on `request`'s connection: 0 for that one, and for `app.inject()`'s. */
  ageMs (request: http.IncomingMessage): number {
    const since = this.#firstRequestAt.get(request.socket)
    return since === undefined ? 0 : this.now() - since
  }
}
