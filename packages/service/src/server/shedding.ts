/**
 * Load shedding for the API routes: past what the event loop can serve, a request is
 * answered 503 `SERVICE_OVERLOADED` with `Retry-After` at once, instead of queueing toward
 * a client timeout. Two signals, both read in `onRequest`, before the body is read or
 * parsed and before any query, so a refusal costs a fraction of a served request:
 *
 * - the event loop (`@fastify/under-pressure`): its mean delay, and optionally its
 *   utilisation, over the last sample interval. Every API request is refused while it
 *   is over its bound: the backstop for a loop that falls behind whatever the reason;
 * - requests in flight (a counter): past the cap, the next request is refused, the
 *   others go on. The steady control under a crowd: it refuses only the excess.
 *
 * `installShedding` adds its hooks to the instance it is given: call it in the
 * encapsulated context that holds the API routes, so `/healthz`, `/readyz`, `/metrics`
 * and `/openapi.json`, registered outside it, are never shed.
 */
import { performance } from 'node:perf_hooks'
import underPressure, { type FastifyUnderPressureOptions } from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { createError } from '../errors.js'

export type ShedReason = 'event_loop_delay' | 'event_loop_utilization' | 'in_flight'

export const shedReasons: readonly ShedReason[] = ['event_loop_delay', 'event_loop_utilization', 'in_flight']

export interface SheddingOptions {
  /** Mean event-loop delay (ms) over a sample interval past which every API request is refused; 0: not checked. */
  maxEventLoopDelayMs: number
  /** Event-loop utilisation (0..1) over a sample interval past which every API request is refused; 0: not checked. */
  maxEventLoopUtilization: number
  /** How often the event loop is sampled (ms). */
  sampleIntervalMs: number
  /** API requests in flight at once; the next one is refused. 0: no cap. */
  maxInFlight: number
  /**
   * Routes (their URL pattern, prefix included) with an admission of their own: the hash
   * routes, whose queue refuses what it cannot serve before the deadline. They are counted
   * apart and never refused by the in-flight cap (the event-loop check still applies).
   */
  ownAdmissionRoutes: ReadonlySet<string>
  /** Sent as `Retry-After` with every refusal. */
  retryAfterSeconds: number
  /** Called once per refusal (metrics). */
  onShed: (reason: ShedReason) => void
}

export interface SheddingState {
  /** API requests in flight now, under the cap. */
  readonly inFlight: number
  /** Requests in flight now on routes with their own admission. */
  readonly inFlightOwnAdmission: number
  /** Refusals so far, by reason. */
  readonly shed: Readonly<Record<ShedReason, number>>
}

type PressureHandler = NonNullable<FastifyUnderPressureOptions['pressureHandler']>

const pressureReasons: Readonly<Record<string, ShedReason>> = {
  eventLoopDelay: 'event_loop_delay',
  eventLoopUtilization: 'event_loop_utilization',
}

/** The refusal's body, serialised once: a refusal must cost next to nothing. */
function refusalBody (): string {
  const error = createError('SERVICE_OVERLOADED')
  return JSON.stringify({ error: { code: error.code, message: error.message } })
}

export async function installShedding (api: FastifyInstance, options: SheddingOptions): Promise<SheddingState> {
  const body = refusalBody()
  const retryAfter = String(Math.max(1, Math.ceil(options.retryAfterSeconds)))
  const shed: Record<ShedReason, number> = { event_loop_delay: 0, event_loop_utilization: 0, in_flight: 0 }
  let inFlight = 0
  let inFlightOwnAdmission = 0

  /** Prepares the 503 and returns its body; no error object, no stack trace, no log line. */
  const refusal = (reply: FastifyReply, reason: ShedReason): string => {
    shed[reason]++
    options.onShed(reason)
    void reply.code(503).header('retry-after', retryAfter).header('content-type', 'application/json; charset=utf-8')
    return body
  }

  if (options.maxEventLoopDelayMs > 0 || options.maxEventLoopUtilization > 0) {
    // The first samples cover the start itself (loading, compiling schemas, migrations): a
    // service that just started has no backlog to protect, so the check waits two samples.
    let checkedFrom = Infinity
    api.addHook('onReady', async () => { checkedFrom = performance.now() + 2 * options.sampleIntervalMs })
    await api.register(underPressure, {
      maxEventLoopDelay: options.maxEventLoopDelayMs,
      maxEventLoopUtilization: options.maxEventLoopUtilization,
      // The default 'cumulative' mode averages since the start: an hour of quiet would hide a saturated loop.
      eventLoopUtilizationMode: 'interval',
      sampleInterval: options.sampleIntervalMs,
      // A returned value is sent as the reply and the request goes no further (under-pressure's
      // README: "any other return value than a promise or nullish will be sent"); its types
      // only know the void form, which calls the next hook even after a reply was sent.
      pressureHandler: ((_request: FastifyRequest, reply: FastifyReply, type: string) => {
        if (performance.now() < checkedFrom) return undefined
        return refusal(reply, pressureReasons[type] ?? 'event_loop_delay')
      }) as unknown as PressureHandler,
    })
  }

  const releaseOne = (): void => { inFlight-- }
  const releaseOwnAdmission = (): void => { inFlightOwnAdmission-- }
  if (options.maxInFlight > 0) {
    // A callback hook: no promise per request. `close` comes once per response, finished or aborted.
    api.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (options.ownAdmissionRoutes.has(request.routeOptions.url ?? '')) {
        inFlightOwnAdmission++
        reply.raw.once('close', releaseOwnAdmission)
        done()
        return
      }
      if (inFlight >= options.maxInFlight) {
        void reply.send(refusal(reply, 'in_flight'))
        return
      }
      inFlight++
      reply.raw.once('close', releaseOne)
      done()
    })
  }

  return {
    get inFlight () { return inFlight },
    get inFlightOwnAdmission () { return inFlightOwnAdmission },
    shed,
  }
}
