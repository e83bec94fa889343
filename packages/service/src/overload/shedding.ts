/**
 * Load shedding for the API routes: past what the event loop can serve, a request is answered
 * 503 `SERVICE_OVERLOADED` with `Retry-After` at once, before its body is read or any query:
 * - requests in flight (in-flight-gate.ts, before Fastify): past the cap only the excess is
 *   refused, the steady control under a crowd;
 * - the event loop's mean delay (`@fastify/under-pressure`, in `onRequest`): every API request is
 *   refused while it is over its bound, the backstop for a loop that falls behind for any reason.
 * The event-loop check sits in the API routes' own context, so `/healthz`, `/readyz`, `/metrics`
 * and `/openapi.json` are never shed.
 */
import type http from 'node:http'
import { performance } from 'node:perf_hooks'
import underPressure, { type FastifyUnderPressureOptions } from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerFactory } from 'fastify'
import { createError } from '../errors.js'
import { gatedServerFactory, InFlightGate } from './in-flight-gate.js'

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
  /** The POST routes (full path) with an admission of their own (the hash routes): never refused by the in-flight cap. */
  ownAdmissionRoutes: ReadonlySet<string>
  /** Sent as `Retry-After` with every refusal. */
  retryAfterSeconds: number
  /** Headers every answer carries (http/security-headers.ts), which the gate's refusal, made before Fastify, adds itself. */
  answerHeaders: Readonly<Record<string, string>>
  /** Called once per refusal (metrics). */
  onShed: (reason: ShedReason) => void
  /** Told of every request the HTTP server receives, before the cap (the pacer notes its connection's age). */
  onRequest?: (request: http.IncomingMessage) => void
}

interface SheddingState {
  /** API requests in flight now, under the cap. */
  readonly inFlight: number
  /** Requests in flight now on routes with their own admission. */
  readonly inFlightOwnAdmission: number
  /** Refusals so far, by reason. */
  readonly shed: Readonly<Record<ShedReason, number>>
}

export interface Shedding {
  readonly state: SheddingState
  /** For Fastify's `serverFactory` option: the HTTP server, the in-flight cap in front of Fastify. */
  readonly serverFactory: FastifyServerFactory
  /** Tells the in-flight cap when Fastify starts serving a request (a `preValidation` hook): one set aside for its body is counted again. */
  installServingMark (app: FastifyInstance): void
  /** Adds the event-loop check to `api`, the encapsulated context of the API routes. */
  installEventLoopCheck (api: FastifyInstance): Promise<void>
  /** At shutdown: the in-flight cap refuses nothing more, so every request gets the app's own answer (SHUTTING_DOWN). */
  stopRefusing (): void
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

export function createShedding (options: SheddingOptions): Shedding {
  const body = refusalBody()
  const refusalHeaders = {
    'retry-after': String(Math.max(1, Math.ceil(options.retryAfterSeconds))),
    'content-type': 'application/json; charset=utf-8',
  }
  const shed: Record<ShedReason, number> = { event_loop_delay: 0, event_loop_utilization: 0, in_flight: 0 }
  const count = (reason: ShedReason): void => {
    shed[reason]++
    options.onShed(reason)
  }
  const gate = options.maxInFlight > 0
    ? new InFlightGate({
      maxInFlight: options.maxInFlight,
      ownAdmissionPaths: options.ownAdmissionRoutes,
      refusal: { headers: { ...options.answerHeaders, ...refusalHeaders }, body },
      onRefuse: () => { count('in_flight') },
    })
    : undefined

  /** Prepares the 503 and returns its body; no error object, no stack trace, no log line. */
  const refusal = (reply: FastifyReply, reason: ShedReason): string => {
    count(reason)
    void reply.code(503).headers(refusalHeaders)
    return body
  }

  return {
    state: {
      get inFlight () { return gate?.inFlight ?? 0 },
      get inFlightOwnAdmission () { return gate?.inFlightOwnAdmission ?? 0 },
      shed,
    },
    serverFactory: gatedServerFactory(gate, options.onRequest),
    stopRefusing () { gate?.stopRefusing() },
    installServingMark (app) {
      if (gate === undefined) return
      app.addHook('preValidation', (request, reply, done) => {
        if (gate.serving(request.raw)) {
          done()
          return
        }
        // Refused (its body came late, and the cap is full by now): answered here, without done().
        void reply.code(503).headers(refusalHeaders).send(body)
      })
    },
    async installEventLoopCheck (api) {
      if (options.maxEventLoopDelayMs <= 0 && options.maxEventLoopUtilization <= 0) return
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
        // A returned value is sent as the reply and ends the request (under-pressure's README); its
        // types only know the void form, which would call the next hook after the reply.
        pressureHandler: ((_request: FastifyRequest, reply: FastifyReply, type: string) => {
          if (performance.now() < checkedFrom) return undefined
          return refusal(reply, pressureReasons[type] ?? 'event_loop_delay')
        }) as unknown as PressureHandler,
      })
    },
  }
}
