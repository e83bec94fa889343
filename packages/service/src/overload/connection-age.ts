/**
 * When each connection's first request came: what tells a new client from a known one.
 *
 * The refusal pacer (pacing.ts) holds a request for its address's and account's refusals only
 * while its connection is young: a client that opens a connection for each retry. It once took
 * "new" to mean "new to the pacer", which sees only the hashed routes: in the lab's `stress`
 * scenario a user's first login came after dozens of reads on the same keep-alive connection,
 * and was held 200 to 250 ms as a stranger's (4,171 of 4,763 refused logins in one run). Then it
 * took "new" to mean "the first request on its connection", and a client that reconnects to
 * retry could skip the hold by sending any request before its login on each connection (a
 * review's finding). Age cannot be had for nothing: the HTTP server's handler notes when a
 * connection's first request came, whatever its route, and the pacer reads the connection's age.
 * A client can still age a connection before its login (a request, then 200 ms idle), but that
 * costs it the wait the hold would have, and once refused, the connection is paced on its own.
 */
import type http from 'node:http'
import type net from 'node:net'
import { performance } from 'node:perf_hooks'

/** Connection -> when its first request came (performance.now()); a number, so no request is kept. */
const firstRequestAt = new WeakMap<net.Socket, number>()

/** Notes the time of `request`'s connection's first request, if this is it. */
export function noteRequest (request: http.IncomingMessage): void {
  if (!firstRequestAt.has(request.socket)) firstRequestAt.set(request.socket, performance.now())
}

/**
 * Milliseconds since the first request on `request`'s connection came: 0 for that first request,
 * and for one that came in without the server (`app.inject()`, a socket of its own each time).
 */
export function connectionAgeMs (request: http.IncomingMessage): number {
  const since = firstRequestAt.get(request.socket)
  return since === undefined ? 0 : performance.now() - since
}
