/**
 * The graceful drain before a shutdown (SIGTERM): closing at once would fail what a load balancer
 * sends until its health check notices. So readiness goes off (503 `SHUTTING_DOWN`), everything
 * else is served for `TOLLBOOTH_SHUTDOWN_DRAIN_MS` with `connection: close`, so keep-alive clients
 * reconnect elsewhere; then the caller closes (process/start.ts).
 */
import type { FastifyInstance } from 'fastify'
import { createError } from '../errors.js'

export interface Drain {
  /** True from the start of the drain on. */
  readonly draining: boolean
  /** Turns readiness off at once and resolves `drainMs` later (at once for 0). Calls after the first share its wait. */
  run (drainMs: number): Promise<void>
}

export interface DrainOptions {
  /** Called when the drain starts and when it ends. */
  onPhase?: (phase: 'draining' | 'drained', drainMs: number) => void
}

/** Adds the drain's hooks to `app` (before it is ready) and returns the switch. */
export function installDrain (app: FastifyInstance, options: DrainOptions = {}): Drain {
  let draining = false
  let window = false
  let done: Promise<void> | undefined
  app.addHook('onRequest', async (request) => {
    if (draining && request.routeOptions.url === '/readyz') {
      // No Retry-After: a health check is not a client to pace (http/app.ts's pacer would hold the next probe).
      throw createError('SHUTTING_DOWN', 'The service is draining before it shuts down: take it out of rotation')
    }
  })
  app.addHook('onSend', async (_request, reply, payload) => {
    // Only while the listener is still open: after the drain, http/app.ts's closing rules apply.
    if (window) reply.header('connection', 'close')
    return payload
  })
  return {
    get draining () { return draining },
    async run (drainMs: number): Promise<void> {
      done ??= new Promise<void>((resolve) => {
        draining = true
        window = true
        options.onPhase?.('draining', drainMs)
        // The global setTimeout, so tests can move node:test's mock clock.
        setTimeout(() => {
          window = false
          options.onPhase?.('drained', drainMs)
          resolve()
        }, drainMs)
      })
      await done
    },
  }
}
