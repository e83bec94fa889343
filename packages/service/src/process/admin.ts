/**
 * The admin listener (TOLLBOOTH_ADMIN_PORT), as Keycloak's management port: what an operator and
 * a scraper need and a client of the API does not, on an address of its own (loopback by
 * default): /metrics and a /readyz with the readiness details, besides /healthz. The API port
 * then keeps /healthz and a bare /readyz, and answers 404 for /metrics (http/app.ts).
 *
 * One process: the app's own readiness check and registry. `serve --workers N`: the primary
 * listens here, answers /metrics with every worker's registry aggregated (cluster-metrics.ts)
 * and /readyz with the workers it has listening.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { installErrorHandling, installSecurityHeaders, metricsRoute, type MetricsRouteOptions } from '../http/index.js'

export interface AdminServerOptions {
  host: string
  port: number
  log: FastifyBaseLogger
  metrics: MetricsRouteOptions['metrics']
  /** The readiness details, or a throw (a coded NOT_READY or SHUTTING_DOWN) when not ready. */
  readiness: (log: FastifyBaseLogger) => Promise<Record<string, unknown>>
}

export interface AdminServer {
  /** http://host:port of the listener. */
  url: string
  app: FastifyInstance
  close (): Promise<void>
}

export async function startAdminServer (options: AdminServerOptions): Promise<AdminServer> {
  const app = Fastify({
    loggerInstance: options.log.child({ component: 'admin' }),
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: false,
  })
  installErrorHandling(app)
  installSecurityHeaders(app)
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' as const }))
  app.get('/readyz', { logLevel: 'warn' }, async (request) => ({ status: 'ready' as const, ...await options.readiness(request.log) }))
  await app.register(metricsRoute, { metrics: options.metrics })
  let url: string
  try {
    url = await app.listen({ host: options.host, port: options.port })
  } catch (err) {
    await app.close()
    throw err
  }
  options.log.info({ url }, 'admin listener: /metrics and the readiness details')
  return { url, app, close: async () => { await app.close() } }
}
