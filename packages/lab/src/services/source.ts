/**
 * Where a lab command's services come from: the target the user named, or services the lab starts
 * itself (local-service.ts), each run's on one database (the user's, or an embedded one started
 * here and stopped at the end); and what each one says about itself on /metrics.
 */
import { startDatabase } from 'tollbooth/launcher'
import { HttpTarget } from '../http/index.js'
import type { ServiceInfo } from '../result.js'
import { startLocalService, type LocalService, type ReplicaOptions } from './local-service.js'
import { MetricsSnapshot } from './prometheus.js'

/** The strategy of the service as it ships: started without the launcher's research harness. */
const shippedStrategy = 'tollbooth'

/**
 * The seeds' own setting (bcrypt cost 10), and accounts as the seed articles' services made them:
 * a registration signs in at once (the scenarios' setup registers its users and uses their
 * tokens), and a crowd registering from one loopback address is no abuse.
 */
export const seedServiceEnv: Readonly<Record<string, string>> = {
  TOLLBOOTH_HASH_ALGORITHM: 'bcrypt',
  TOLLBOOTH_BCRYPT_COST: '10',
  TOLLBOOTH_REGISTRATION_MODE: 'immediate',
  TOLLBOOTH_REGISTER_THROTTLE_CLIENT_REQUESTS: '1000000',
  TOLLBOOTH_REGISTER_THROTTLE_ACCOUNT_REQUESTS: '1000000',
}

/** A command's choices of where its services come from (the lab's options, LabOptions). */
export interface ServiceSourceOptions {
  /** A running service; unset: the lab starts its own. */
  target?: string | undefined
  /** With `target`: where its /metrics is; default the target. */
  metricsUrl?: string | undefined
  /** For services the lab starts: PostgreSQL to use instead of an embedded one. */
  databaseUrl?: string | undefined
  /** Environment for services the lab starts, over `seedServiceEnv`. */
  serviceEnv?: Record<string, string> | undefined
  /** Services the lab starts: N replicas behind HAProxy. */
  replicas?: ReplicaOptions | undefined
  log?: ((line: string) => void) | undefined
  /** An embedded database the lab starts counts its statements (pg_stat_statements), for `lab sizing`. */
  databaseStatistics?: boolean
}

type Service = Omit<LocalService, 'replicas'> & { info: ServiceInfo }

export interface ServiceSource {
  /** The target, or a service the lab starts with `strategy` (`replicas`: behind HAProxy). */
  start (strategy: string, replicas?: ReplicaOptions): Promise<Service>
  /** The services' database when the lab knows it (its own, or --database-url); undefined for a target without one. */
  databaseUrl: string | undefined
  close (): Promise<void>
}

/**
 * What /metrics says about the service it came from. For a service the lab started,
 * `launchedStrategy` (the strategy it asked the launcher for) and `settings` win.
 */
async function serviceInfo (url: string, metricsUrl: string, launchedStrategy: string | undefined, settings: Record<string, string>): Promise<ServiceInfo> {
  const target = new HttpTarget(metricsUrl, { connections: 1, timeoutMs: 5000 })
  const response = await target.send({ method: 'GET', path: '/metrics', readText: true }).finally(async () => { await target.close() })
  const metrics = response.status === 200 && response.text !== undefined ? MetricsSnapshot.parse(response.text) : null
  const info = metrics?.labelsOf('tollbooth_info') ?? null
  const pool = metrics?.labelsOf('tollbooth_hash_pool_info') ?? null
  const threads = metrics?.sum('tollbooth_hash_pool_threads') ?? null
  const reported: Record<string, string> = {}
  if (info?.algorithm !== undefined) reported.algorithm = info.algorithm
  if (pool?.cpu_budget !== undefined) reported.cpuBudget = `${pool.cpu_budget} (${pool.cpu_budget_source ?? '?'})`
  if (threads !== null) reported.hashThreads = String(threads)
  if (pool?.malloc_settings !== undefined) reported.mallocSettings = pool.malloc_settings
  return {
    url,
    startedByLab: launchedStrategy !== undefined,
    strategy: launchedStrategy ?? info?.strategy ?? pool?.strategy ?? null,
    version: info?.version ?? null,
    settings: { ...reported, ...settings },
  }
}

/**
 * The target, or services the lab starts on one database (the user's or an embedded one).
 * `labDiagnostics`: the services it starts have the diagnostic routes. A replica set's warnings
 * go to `warnings`, once each.
 */
export async function serviceSource (options: ServiceSourceOptions, labDiagnostics: boolean, warnings: string[]): Promise<ServiceSource> {
  if (options.target !== undefined) {
    const url = options.target.replace(/\/+$/, '')
    const metricsUrl = options.metricsUrl?.replace(/\/+$/, '') ?? url
    return { start: async () => ({ url, metricsUrl, pid: undefined, info: await serviceInfo(url, metricsUrl, undefined, {}), stop: async () => {} }), databaseUrl: options.databaseUrl, close: async () => {} }
  }
  // An embedded PostgreSQL in a scratch folder, deleted on stop.
  const database = options.databaseUrl === undefined
    ? await startDatabase({ name: 'tollbooth_lab', label: 'lab', statementStatistics: options.databaseStatistics === true })
    : { url: options.databaseUrl, stop: async () => {} }
  return {
    databaseUrl: database.url,
    async start (strategy, replicas = options.replicas) {
      const env = { ...seedServiceEnv, ...options.serviceEnv }
      // What ships, unless the run needs the harness: a seed's strategy, or the diagnostic routes.
      const harness = strategy === shippedStrategy && !labDiagnostics ? undefined : { strategy, labDiagnostics }
      const service = await startLocalService({ databaseUrl: database.url, env, harness, replicas })
      options.log?.(`started ${strategy} at ${service.url} (${service.replicas?.description ?? `pid ${String(service.pid)}`})`)
      for (const warning of service.replicas?.warnings ?? []) {
        options.log?.(`warning: ${warning}`)
        if (!warnings.includes(warning)) warnings.push(warning)
      }
      // Settings worth showing in a report: tollbooth's own variables, never secrets.
      const shown = Object.fromEntries(Object.entries(env).filter(([key]) => (key.startsWith('TOLLBOOTH_') || key === 'UV_THREADPOOL_SIZE') && !/SECRET|ENCRYPTION_KEY/.test(key)))
      if (labDiagnostics) shown.labDiagnostics = 'on'
      if (service.replicas !== undefined) shown.replicas = service.replicas.description
      try {
        return { ...service, info: await serviceInfo(service.url, service.metricsUrl, strategy, shown) }
      } catch (err) {
        await service.stop()
        throw err
      }
    },
    close: async () => { await database.stop() },
  }
}
