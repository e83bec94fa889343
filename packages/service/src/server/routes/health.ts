import type pg from 'pg'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { createError, isTollboothError } from '../../errors.js'
import { isConnectionFailure, isDatabaseFault } from '../../db/errors.js'
import type { PasswordEngine } from '../../hashing/types.js'
import { errors } from '../schemas.js'
import type { Metrics } from '../metrics.js'

export interface HealthRoutesOptions {
  db: pg.Pool
  engine: PasswordEngine
  metrics: Metrics
  readinessTimeoutMs?: number
}

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

export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, { db, engine, metrics, readinessTimeoutMs = 2000 }) => {
  app.get('/healthz', {
    schema: {
      tags: ['operations'],
      summary: 'Liveness: answered by the event loop alone (no database, no hash pool)',
      response: { 200: Type.Object({ status: Type.Literal('ok') }) },
    },
    logLevel: 'warn',
  }, async () => ({ status: 'ok' as const }))

  app.get('/readyz', {
    schema: {
      tags: ['operations'],
      summary: 'Readiness: the database answers and the hash pool is alive',
      response: {
        200: Type.Object({ status: Type.Literal('ready'), hashPool: Type.Object({ threads: Type.Integer(), queued: Type.Integer() }) }),
        ...errors(503),
      },
    },
    logLevel: 'warn',
  }, async (request) => {
    try {
      await withTimeout(db.query('SELECT 1'), readinessTimeoutMs, 'the database')
    } catch (err) {
      // A pool whose connections are all busy is serving: failing readiness for it would take
      // every busy instance out of the load balancer at once and move the crowd onto fewer.
      if (!isTollboothError(err, 'SERVICE_OVERLOADED')) {
        // Connection faults are logged by the pool (throttled); anything else (a wrong password,
        // a missing database) only shows here. The driver's text never goes into the answer.
        if (!isConnectionFailure(err) && !isDatabaseFault(err)) request.log.warn({ code: (err as { code?: unknown }).code, reason: (err as Error).message }, 'readiness: the database check failed')
        throw createError('NOT_READY', 'database unavailable')
      }
    }
    try {
      await withTimeout(engine.ping(readinessTimeoutMs), readinessTimeoutMs, 'the hash pool')
    } catch (err) {
      throw createError('NOT_READY', `the hash pool is not alive: ${(err as Error).message}`)
    }
    const stats = engine.stats()
    return { status: 'ready' as const, hashPool: { threads: stats.threads, queued: stats.queued } }
  })

  app.get('/metrics', {
    schema: { tags: ['operations'], summary: 'Prometheus metrics (text exposition format)', produces: ['text/plain'] },
    logLevel: 'warn',
  }, async (_request, reply) => {
    let body: string
    try {
      body = await metrics.render()
    } catch (err) {
      throw createError('NOT_READY', `metrics could not be gathered: ${(err as Error).message}`)
    }
    return await reply.type(metrics.contentType).send(body)
  })
}
