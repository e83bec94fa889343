/**
 * The lab's three commands as library calls, each returning one LabResult:
 * `run` (one load against one service), `knee` (rising open-model steps until
 * the service falls behind) and `compare` (the same load against the service
 * started once per hash strategy, on one database). Without a target the lab
 * starts what it measures and stops it after.
 */
import { randomBytes } from 'node:crypto'
import { createError } from './errors.js'
import { HttpTarget } from './http.js'
import { defaultKneeCriteria, kneeOf, searchKnee } from './knee.js'
import { startLocalDatabase, startLocalService, type LocalDatabase } from './local-service.js'
import { machineInfo } from './machine.js'
import { MetricsSnapshot } from './prometheus.js'
import { referencesFor } from './references.js'
import { labResultSchema, type KneeCriteria, type KneeResult, type KneeStep, type LabCommand, type LabResult, type LoadSpec, type RunResult, type SecondSample, type ServerSample, type ServiceInfo, type Stage } from './result.js'
import { LabRun, segmentLoadOf } from './runner.js'
import type { Scenario, ScenarioRef } from './scenario.js'
import { loadScenario, scenarioRef } from './scenarios/index.js'
import { runScenarioSetup } from './setup.js'
import { errorTotal } from './stats.js'

/** Every hash strategy the service offers, in the order a comparison runs them: the seeds' fixes, then ours. */
export const allStrategies = ['event-loop', 'libuv', 'libuv-128', 'spawn', 'piscina', 'cluster', 'tollbooth'] as const

/** The seeds' own setting: bcrypt cost 10. */
export const seedServiceEnv: Readonly<Record<string, string>> = { TOLLBOOTH_HASH_ALGORITHM: 'bcrypt', TOLLBOOTH_BCRYPT_COST: '10' }

/** What the user asked for; anything unset comes from the scenario's defaults. */
export interface LoadOptions {
  durationMs?: number
  vus?: number
  stages?: Stage[]
  /** Open model: arrivals per second (constant for the duration). */
  rate?: number
  /** Open model: rate stages, from `rate` (or the scenario's) to each target. */
  rateStages?: Stage[]
  thinkTimeMs?: number
  maxInFlight?: number
  requestTimeoutMs?: number
  healthzProbeRate?: number
  workers?: number
  honourRetryAfter?: boolean
  accounts?: number
}

export interface LabOptions {
  /** A built-in scenario's name, or a .json / .js file. */
  scenario: string
  /** A running service; unset: the lab starts its own (embedded PostgreSQL). */
  target?: string | undefined
  /** For services the lab starts: PostgreSQL to use instead of an embedded one. */
  databaseUrl?: string | undefined
  load: LoadOptions
  /** Environment for services the lab starts (hash settings ...). Default: the seeds' bcrypt cost 10. */
  serviceEnv?: Record<string, string>
  /** Services the lab starts: N replicas behind HAProxy, each under a CPU quota (`lab scale`: one run per count). */
  replicas?: { count: number, cpusPerReplica?: number | undefined } | undefined
  /** `run` and `knee` with a lab-started service: its hash strategy (default tollbooth). */
  strategy?: string
  commandLine?: string
  log?: (line: string) => void
  onSecond?: (label: string, sample: SecondSample, server: ServerSample | undefined) => void
  /** Aborting stops the load at once; the result so far is still returned, with a warning. */
  signal?: AbortSignal
}

export interface KneeOptions extends LabOptions {
  criteria?: Partial<Omit<KneeCriteria, 'startRate'>> & { startRate?: number, maxRate?: number }
}

/** Closed-model clients: `polite` wait out a 503's Retry-After, `naive` retry at once (as k6 VUs in the seeds' scripts do). */
export type ClientKind = 'polite' | 'naive'
export const clientKinds: readonly ClientKind[] = ['polite', 'naive']

export interface CompareOptions extends LabOptions {
  strategies?: readonly string[]
  /** Each strategy is measured once per kind, in this order (default: as `load.honourRetryAfter` says). */
  clients?: readonly ClientKind[]
}

const defaultDurationMs = 30_000
const defaultMaxInFlight = 2000

function positive (value: number | undefined, field: string): void {
  if (value !== undefined && (!Number.isFinite(value) || value <= 0)) throw createError('CONFIG_INVALID', `${field} must be a number above 0, got ${value}`, { field })
}

/** The user's load options over the scenario's defaults, validated. */
export function resolveLoad (scenario: Scenario<unknown>, options: LoadOptions, forceModel?: 'open'): LoadSpec {
  for (const field of ['durationMs', 'vus', 'rate', 'maxInFlight', 'requestTimeoutMs', 'workers'] as const) positive(options[field], field)
  if (options.vus !== undefined && !Number.isInteger(options.vus)) throw createError('CONFIG_INVALID', `vus must be a whole number, got ${options.vus}`, { field: 'vus' })
  if (options.workers !== undefined && (!Number.isInteger(options.workers) || options.workers > 64)) throw createError('CONFIG_INVALID', 'workers must be a whole number from 1 to 64', { field: 'workers' })
  const wantsOpen = forceModel === 'open' || options.rate !== undefined || options.rateStages !== undefined
  const wantsClosed = options.vus !== undefined || options.stages !== undefined
  if (wantsOpen && wantsClosed) throw createError('CONFIG_INVALID', 'give either virtual users (--vus / --stages) or an arrival rate (--rate / --rate-stages), not both', { field: 'vus' })
  const model = wantsOpen ? 'open' : wantsClosed ? 'closed' : scenario.defaults.model
  const durationMs = options.durationMs ?? defaultDurationMs
  const base = {
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    healthzProbeRate: options.healthzProbeRate ?? 10,
    workers: options.workers ?? 1,
    honourRetryAfter: options.honourRetryAfter ?? true,
    accounts: options.accounts ?? scenario.defaults.accounts,
  }
  if (model === 'open') {
    const startRate = options.rate ?? scenario.defaults.rate
    return {
      ...base,
      model: 'open',
      startRate,
      stages: options.rateStages ?? [{ durationMs, target: startRate }],
      maxInFlight: options.maxInFlight ?? defaultMaxInFlight,
    }
  }
  // k6: `--vus N --duration D` holds N from the start; stages ramp from 0.
  const constant = options.stages === undefined && options.vus !== undefined
  const stages = options.stages ?? (options.vus === undefined ? scenario.defaults.stages(durationMs) : [{ durationMs, target: options.vus }])
  return { ...base, model: 'closed', startVus: constant ? (options.vus ?? 0) : 0, stages, thinkTimeMs: options.thinkTimeMs ?? scenario.defaults.thinkTimeMs }
}

/** What /metrics says about the service it came from. */
export function serviceInfoFromMetrics (url: string, metrics: MetricsSnapshot | null, startedByLab: boolean, settings: Record<string, string>): ServiceInfo {
  const info = metrics?.labelsOf('tollbooth_info') ?? null
  const pool = metrics?.labelsOf('tollbooth_hash_pool_info') ?? null
  const threads = metrics?.sum('tollbooth_hash_pool_threads') ?? null
  const reported: Record<string, string> = {}
  if (info?.algorithm !== undefined) reported.algorithm = info.algorithm
  if (pool?.cpu_budget !== undefined) reported.cpuBudget = `${pool.cpu_budget} (${pool.cpu_budget_source ?? '?'})`
  if (threads !== null) reported.hashThreads = String(threads)
  return {
    url,
    startedByLab,
    strategy: settings.TOLLBOOTH_HASH_STRATEGY ?? info?.strategy ?? pool?.strategy ?? null,
    version: info?.version ?? null,
    settings: { ...reported, ...settings },
  }
}

async function fetchMetrics (url: string): Promise<MetricsSnapshot | null> {
  const target = new HttpTarget(url, { connections: 1, timeoutMs: 5000 })
  try {
    const response = await target.send({ method: 'GET', path: '/metrics', readText: true })
    return response.status === 200 && response.text !== undefined ? MetricsSnapshot.parse(response.text) : null
  } finally {
    await target.close()
  }
}

interface AcquiredService {
  url: string
  pid: number | undefined
  info: ServiceInfo
  stop (): Promise<void>
}

/** Settings worth showing in a report: tollbooth's own variables, never secrets. */
function visibleSettings (env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([key]) => (key.startsWith('TOLLBOOTH_') || key === 'UV_THREADPOOL_SIZE') && !/SECRET|ENCRYPTION_KEY/.test(key)))
}

async function startService (database: LocalDatabase, env: Record<string, string>, log: (line: string) => void, options: Pick<LabOptions, 'replicas'> = {}, warnings: string[] = []): Promise<AcquiredService> {
  const service = await startLocalService({ databaseUrl: database.url, env, replicas: options.replicas })
  log(`started ${env.TOLLBOOTH_HASH_STRATEGY ?? 'tollbooth'} at ${service.url} (${service.replicas?.description ?? `pid ${String(service.pid)}`})`)
  for (const warning of service.replicas?.warnings ?? []) log(`warning: ${warning}`)
  for (const warning of service.replicas?.warnings ?? []) if (!warnings.includes(warning)) warnings.push(warning)
  const info = serviceInfoFromMetrics(service.url, await fetchMetrics(service.url), true, visibleSettings(env))
  if (service.replicas !== undefined) info.settings.replicas = service.replicas.description
  return { url: service.url, pid: service.pid, info, stop: async () => { await service.stop() } }
}

function serviceEnvFor (options: LabOptions, scenario: Scenario<unknown>, strategy: string): Record<string, string> {
  return {
    ...seedServiceEnv,
    ...options.serviceEnv,
    TOLLBOOTH_HASH_STRATEGY: strategy,
    ...(scenario.needsLabDiagnostics === true ? { TOLLBOOTH_LAB_DIAGNOSTICS: 'true' } : {}),
  }
}

function emptyResult (command: LabCommand, options: LabOptions, scenario: Scenario<unknown>, load: LoadSpec): LabResult {
  return {
    schema: labResultSchema,
    command,
    createdAt: new Date().toISOString(),
    commandLine: options.commandLine ?? `tollbooth lab ${command} --scenario ${options.scenario}`,
    machine: machineInfo(),
    scenario: { name: scenario.name, description: scenario.description, endpoints: scenario.endpoints, ...(scenario.phases === undefined ? {} : { phases: scenario.phases }) },
    load,
    runs: [],
    references: referencesFor(scenario.name),
    warnings: [],
  }
}

/** A database for the services the lab starts: the user's, or an embedded one for this command. */
async function labDatabase (options: LabOptions): Promise<LocalDatabase> {
  if (options.databaseUrl !== undefined) return { url: options.databaseUrl, stop: async () => {} }
  return await startLocalDatabase()
}

interface Measured { run: RunResult, warnings: string[] }

/**
 * Setup, then the whole load once per phase, against one service. With `each`,
 * the caller drives the segments itself (the knee's steps).
 */
async function measure (
  label: string,
  service: AcquiredService,
  scenario: Scenario<unknown>,
  ref: ScenarioRef,
  load: LoadSpec,
  options: LabOptions,
  runId: string,
  segments?: (run: LabRun) => Promise<void>
): Promise<Measured> {
  const log = options.log ?? (() => {})
  const data = await runScenarioSetup(scenario, service.url, load.accounts, log, load.requestTimeoutMs)
  const run = await LabRun.start({
    label,
    url: service.url,
    service: service.info,
    pid: service.pid,
    scenario: ref,
    endpointOrder: scenario.endpoints,
    data,
    load,
    runId,
    onSecond: (sample, server) => options.onSecond?.(label, sample, server),
  })
  let interrupted = options.signal?.aborted === true
  let onAbort = (): void => {}
  const aborted = new Promise<void>((resolve) => {
    onAbort = () => {
      interrupted = true
      resolve()
    }
    if (interrupted) resolve()
  })
  options.signal?.addEventListener('abort', onAbort, { once: true })
  try {
    const work = segments !== undefined
      ? segments(run)
      : (async () => {
          for (const phase of scenario.phases ?? [undefined]) {
            if (interrupted) break
            await run.segment(phase, segmentLoadOf(load))
          }
        })()
    await Promise.race([work, aborted])
  } catch (err) {
    // A generator that failed: stop the others, the scraper and the probe before reporting it.
    await run.finish(true).catch(() => {})
    throw err
  } finally {
    options.signal?.removeEventListener('abort', onAbort)
  }
  const measured = await run.finish(interrupted)
  if (interrupted) measured.warnings.push(`${label}: interrupted; the figures cover the run up to the interruption`)
  return measured
}

async function prepare (command: LabCommand, options: LabOptions, forceModel?: 'open'): Promise<{ scenario: Scenario<unknown>, ref: ScenarioRef, load: LoadSpec, result: LabResult }> {
  const ref = scenarioRef(options.scenario)
  const scenario = await loadScenario(ref)
  const load = resolveLoad(scenario, options.load, forceModel)
  return { scenario, ref, load, result: emptyResult(command, options, scenario, load) }
}

/** Acquires the service of a `run` or `knee`: the target, or one the lab starts (with its database). */
async function acquire (options: LabOptions, scenario: Scenario<unknown>, warnings: string[] = []): Promise<AcquiredService> {
  const log = options.log ?? (() => {})
  if (options.target !== undefined) {
    const url = options.target.replace(/\/+$/, '')
    return { url, pid: undefined, info: serviceInfoFromMetrics(url, await fetchMetrics(url), false, {}), stop: async () => {} }
  }
  const strategy = options.strategy ?? 'tollbooth'
  if (!(allStrategies as readonly string[]).includes(strategy)) throw createError('CONFIG_INVALID', `strategy must be one of ${allStrategies.join(', ')}, got "${strategy}"`, { field: 'strategy' })
  const database = await labDatabase(options)
  try {
    const service = await startService(database, serviceEnvFor(options, scenario, strategy), log, options, warnings)
    return {
      ...service,
      stop: async () => {
        await service.stop()
        await database.stop()
      },
    }
  } catch (err) {
    await database.stop()
    throw err
  }
}

export async function labRun (options: LabOptions): Promise<LabResult> {
  const { scenario, ref, load, result } = await prepare('run', options)
  const service = await acquire(options, scenario, result.warnings)
  try {
    const { run, warnings } = await measure(service.info.strategy ?? 'run', service, scenario, ref, load, options, randomBytes(6).toString('hex'))
    result.runs.push(run)
    result.warnings.push(...warnings)
  } finally {
    await service.stop()
  }
  return result
}

export async function labKnee (options: KneeOptions): Promise<LabResult> {
  const { scenario, ref, load, result } = await prepare('knee', options, 'open')
  if (load.model !== 'open') throw new Error('unreachable: a knee search is an open model')
  const criteria: KneeCriteria = { ...defaultKneeCriteria, startRate: load.startRate, ...options.criteria }
  for (const field of ['startRate', 'stepFactor', 'stepDurationMs', 'maxSteps'] as const) positive(criteria[field], field)
  const maxRate = options.criteria?.maxRate ?? Number.POSITIVE_INFINITY
  const steps: KneeStep[] = []
  let search: KneeResult | undefined
  const service = await acquire(options, scenario, result.warnings)
  try {
    const { run, warnings } = await measure(service.info.strategy ?? 'knee', service, scenario, ref, load, options, randomBytes(6).toString('hex'), async (labRun) => {
      search = await searchKnee(criteria, maxRate, async (offered, index) => {
        const segment = await labRun.segment(undefined, { model: 'open', startRate: offered, stages: [{ durationMs: criteria.stepDurationMs, target: offered }], maxInFlight: load.maxInFlight })
        return {
          index,
          offeredPerSecond: offered,
          achievedPerSecond: Math.round((segment.achievedInWindow / (criteria.stepDurationMs / 1000)) * 100) / 100,
          latency: segment.all.latency,
          errorRate: segment.all.requests === 0 ? 0 : errorTotal(segment.all.errors) / segment.all.requests,
          dropped: segment.dropped,
          startT: segment.startT,
          endT: segment.endT,
        }
      }, steps, options.log)
    })
    result.runs.push(run)
    result.warnings.push(...warnings)
  } finally {
    await service.stop()
  }
  const first = steps[0]
  const last = steps.at(-1)
  result.load = {
    ...load,
    startRate: first?.offeredPerSecond ?? criteria.startRate,
    stages: last === undefined ? [] : [{ durationMs: steps.length * criteria.stepDurationMs, target: last.offeredPerSecond }],
  }
  result.knee = search ?? { criteria, steps, kneePerSecond: kneeOf(steps), stoppedBecause: `interrupted after ${steps.length} steps` }
  return result
}

export async function labCompare (options: CompareOptions): Promise<LabResult> {
  if (options.target !== undefined) {
    throw createError('CONFIG_INVALID', 'compare starts the service once per strategy itself: drop --target (use --database-url to measure on your own PostgreSQL)', { field: 'target' })
  }
  const strategies = options.strategies ?? allStrategies
  for (const strategy of strategies) {
    if (!(allStrategies as readonly string[]).includes(strategy)) throw createError('CONFIG_INVALID', `unknown strategy "${strategy}": use ${allStrategies.join(', ')}`, { field: 'strategies' })
  }
  const { scenario, ref, load, result } = await prepare('compare', options)
  const log = options.log ?? (() => {})
  const runId = randomBytes(6).toString('hex')
  const database = await labDatabase(options)
  const clients = options.clients ?? [load.honourRetryAfter ? 'polite' : 'naive']
  for (const kind of clients) {
    if (!clientKinds.includes(kind)) throw createError('CONFIG_INVALID', `unknown kind of clients "${String(kind)}": use ${clientKinds.join(', ')}`, { field: 'clients' })
  }
  if (clients.length > 1) result.load.politeAndNaive = true
  const pairs = strategies.flatMap((strategy) => clients.map((kind) => ({ strategy, kind })))
  try {
    for (const [index, { strategy, kind }] of pairs.entries()) {
      if (options.signal?.aborted === true) break
      // One kind of clients: the strategy's name alone, as before; both: "tollbooth naive".
      const label = clients.length > 1 ? `${strategy} ${kind}` : strategy
      log(`== ${label} (${index + 1} of ${pairs.length})`)
      let service: AcquiredService
      try {
        service = await startService(database, serviceEnvFor(options, scenario, strategy), log, options, result.warnings)
      } catch (err) {
        result.warnings.push(`${label}: did not start: ${(err as Error).message.split('\n')[0] ?? ''}`)
        continue
      }
      try {
        const runLoad = { ...load, honourRetryAfter: kind === 'polite' }
        const { run, warnings } = await measure(label, service, scenario, ref, runLoad, options, `${runId}${index}`)
        run.clients = kind
        result.runs.push(run)
        result.warnings.push(...warnings)
      } finally {
        await service.stop()
      }
    }
  } finally {
    await database.stop()
  }
  return result
}

/**
 * `lab scale`: the same load against 1, 2, 3 ... replicas (each under the same CPU quota) on one
 * database, reported as a comparison whose runs are the replica counts.
 */
export async function labScale (options: LabOptions & { replicaCounts: readonly number[] }): Promise<LabResult> {
  if (options.target !== undefined) throw createError('CONFIG_INVALID', 'scale starts the replicas itself: drop --target', { field: 'target' })
  for (const count of options.replicaCounts) positive(count, 'replicas')
  const { scenario, ref, load, result } = await prepare('compare', options)
  const log = options.log ?? (() => {})
  const database = await labDatabase(options)
  const runId = randomBytes(6).toString('hex')
  try {
    for (const [index, count] of options.replicaCounts.entries()) {
      if (options.signal?.aborted === true) break
      const label = `${count} replica${count === 1 ? '' : 's'}`
      log(`== ${label} (${index + 1} of ${options.replicaCounts.length})`)
      const service = await startService(database, serviceEnvFor(options, scenario, options.strategy ?? 'tollbooth'), log, { replicas: { count, cpusPerReplica: options.replicas?.cpusPerReplica } }, result.warnings)
      try {
        const { run, warnings } = await measure(label, service, scenario, ref, load, options, `${runId}${index}`)
        result.runs.push(run)
        result.warnings.push(...warnings)
      } finally {
        await service.stop()
      }
    }
  } finally {
    await database.stop()
  }
  return result
}
