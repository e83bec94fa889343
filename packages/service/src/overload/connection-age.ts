/**
 * When each connection's first request came: what tells a new client from a known one. The
 * refusal pacer (pacing.ts) holds a request for its address's and account's refusals only while
 * its connection is young: a client that opens a connection for each retry. The HTTP server's
 * handler notes every connection's first request, whatever its route, so a user whose first login
 * comes after reads on a keep-alive connection is not taken for a stranger, and a client that
 * reconnects to retry cannot skip the hold by sending another request first (aging a connection
 * before its login costs it the wait the hold would have).
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

  /**
   * Milliseconds since the first request on `request`'s connection came: 0 for that first request,
   * and for one that came in without the server (`app.inject()`, a socket of its own each time).
   */
  ageMs (request: http.IncomingMessage): number {
    const since = this.#firstRequestAt.get(request.socket)
    return since === undefined ? 0 : this.now() - since
  }
}
