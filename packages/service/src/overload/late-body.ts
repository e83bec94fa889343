/**
 * Calls back when a request's body has not all come a turn of the event loop after now: a body
 * sent with its headers is parsed in their turn, so only a slow or missing one is late. Such a
 * request gives back what it holds (a place under the cap, in the hash queue): headers alone must
 * not hold what a crowd needs. One `setImmediate` per turn checks every request registered in it.
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
