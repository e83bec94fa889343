import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { createError, isTollboothError } from '../../errors.js'
import { isConnectionFailure, isDatabaseFault } from '../../db/index.js'
import type { PasswordEngine } from '../../hashing/index.js'
import { errors } from '../schemas.js'
import type { Metrics } from '../../metrics/index.js'

export interface HealthRoutesOptions {
  db: pg.Pool
  engine: PasswordEngine
  /** The hash pool's figures in /readyz's answer: false when TOLLBOOTH_ADMIN_PORT serves them (process/admin.ts), and /readyz says its status alone. */
  details: boolean
  readinessTimeoutMs?: number
}

export interface MetricsRouteOptions {
  metrics: Pick<Metrics, 'render' | 'contentType'>
}

/** What /readyz reports besides its status, where details are shown. */
export interface ReadinessDetails { hashPool: { threads: number, queued: number } }

async function withTimeout<T> (work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(createError('NOT_READY', `${what} did not answer within ${ms} ms`)) }, ms)
  })
  try {
    return await Promise.race([work, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** The database answers and the hash pool is alive, within `timeoutMs` each; else NOT_READY, the driver's text to the log only. */
export async function checkReadiness (db: pg.Pool, engine: PasswordEngine, timeoutMs: number, log: FastifyBaseLogger): Promise<ReadinessDetails> {
  try {
    await withTimeout(db.query('SELECT 1'), timeoutMs, 'the database')
  } catch (err) {
    // A pool whose connections are all busy is serving: failing readiness for it would take
    // every busy instance out of the load balancer at once and move the crowd onto fewer.
    if (!isTollboothError(err, 'SERVICE_OVERLOADED')) {
      // Connection faults are logged by the pool (throttled); anything else (a wrong password,
      // a missing database) only shows here.
      if (!isConnectionFailure(err) && !isDatabaseFault(err)) log.warn({ code: (err as { code?: unknown }).code, reason: (err as Error).message }, 'readiness: the database check failed')
      throw createError('NOT_READY', 'database unavailable')
    }
  }
  try {
    await withTimeout(engine.ping(timeoutMs), timeoutMs, 'the hash pool')
  } catch (err) {
    log.warn({ reason: (err as Error).message }, 'readiness: the hash pool check failed')
    throw createError('NOT_READY', 'hash pool unavailable')
  }
  const stats = engine.stats()
  return { hashPool: { threads: stats.threads, queued: stats.queued } }
}

export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, { db, engine, details, readinessTimeoutMs = 2000 }) => {
  app.get('/healthz', {
    schema: {
      tags: ['operations'],
      summary: 'Liveness: answered by the event loop alone (no database, no hash pool)',
      response: { 200: Type.Object({ status: Type.Literal('ok') }) },
    },
    logLevel: 'warn',
  }, async () => ({ status: 'ok' as const }))

  // One readiness check at a time, shared by the requests that arrive while it runs: a flood of
  // /readyz (never shed) costs one check at a time, not one each.
  let running: Promise<ReadinessDetails> | undefined
  const sharedReadiness = async (): Promise<ReadinessDetails> => {
    running ??= checkReadiness(db, engine, readinessTimeoutMs, app.log).finally(() => { running = undefined })
    return await running
  }

  const ready = details
    ? Type.Object({ status: Type.Literal('ready'), hashPool: Type.Object({ threads: Type.Integer(), queued: Type.Integer() }) })
    : Type.Object({ status: Type.Literal('ready') })
  app.get('/readyz', {
    schema: {
      tags: ['operations'],
      summary: details ? 'Readiness: the database answers and the hash pool is alive' : 'Readiness: the database answers and the hash pool is alive (status only; the details are on the admin port)',
      response: { 200: ready, ...errors(503) },
    },
    logLevel: 'warn',
  }, async () => {
    const found = await sharedReadiness()
    return details ? { status: 'ready' as const, ...found } : { status: 'ready' as const }
  })
}

/** GET /metrics: on the API port, or on the admin port alone when TOLLBOOTH_ADMIN_PORT is set (process/admin.ts). */
export const metricsRoute: FastifyPluginAsyncTypebox<MetricsRouteOptions> = async (app, { metrics }) => {
  app.get('/metrics', {
    schema: { tags: ['operations'], summary: 'Prometheus metrics (text exposition format)', produces: ['text/plain'] },
    logLevel: 'warn',
  }, async (request, reply) => {
    let body: string
    try {
      body = await metrics.render()
    } catch (err) {
      request.log.warn({ reason: (err as Error).message }, 'metrics could not be gathered')
      throw createError('NOT_READY', 'metrics could not be gathered')
    }
    return await reply.type(metrics.contentType).send(body)
  })
}
