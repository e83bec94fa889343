/**
 * Calls back when a request's body has not all come a turn of the event loop after now.
 *
 * Why a turn: a body sent in the same packets as its headers (every crowd's, every ordinary
 * client's) is parsed in the turn its headers are, so `complete` is set by the next one; only a
 * body that is slow, or never comes, is still missing then. What a request holds from its
 * headers on (a place under the in-flight cap, a place in the hash queue) is given back or set
 * aside for such a one: headers alone must not hold what a crowd needs.
 *
 * One `setImmediate` per turn checks every request registered in it, not one per request.
 */
import type http from 'node:http'

interface BodyCheck {
  readonly request: http.IncomingMessage
  readonly onLate: () => void
}

const checks: BodyCheck[] = []

function runChecks (): void {
  for (const { request, onLate } of checks.splice(0)) {
    if (!request.complete) onLate()
  }
}

/** Calls `onLate` a turn after now if `request`'s body has not all come by then; else never. */
export function whenBodyLate (request: http.IncomingMessage, onLate: () => void): void {
  checks.push({ request, onLate })
  if (checks.length === 1) setImmediate(runChecks)
}
