/**
 * Which request came first on its connection: what tells a new client from a known one.
 *
 * The refusal pacer (pacing.ts) holds a request for its address's and account's refusals only
 * when its connection is new to it: a client that opens a connection for each retry. It once
 * took "new" to mean "new to the pacer", which sees only hashed routes: in the lab's `stress`
 * scenario a user's first login came after dozens of reads on the same keep-alive connection,
 * and was held 200 to 250 ms as a stranger's (4,171 of 4,763 refused logins in one run). The
 * HTTP server's handler notes every request here, so a connection is new for its first request
 * only, whatever the route.
 */
import type http from 'node:http'
import type net from 'node:net'

const firstRequests = new WeakMap<net.Socket, http.IncomingMessage>()

/** Notes `request` as its connection's first unless one came before it. */
export function noteRequest (request: http.IncomingMessage): void {
  if (!firstRequests.has(request.socket)) firstRequests.set(request.socket, request)
}

/** Whether `request` is the first on its connection (or came in without the server: `app.inject()`). */
export function isFirstOnConnection (request: http.IncomingMessage): boolean {
  const first = firstRequests.get(request.socket)
  return first === undefined || first === request
}
