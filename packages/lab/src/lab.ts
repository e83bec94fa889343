/**
 * The lab's face (`@tollbooth/lab`): its commands as library calls (run, knee, compare, scale),
 * each returning one LabResult, and the probe floor. Options are checked here, once; the rooms
 * below trust them. Without a target the lab starts what it measures (on one database for the
 * whole command) and stops it after.
 */
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { Type, type Static } from '@sinclair/typebox'
import { machineFacts, settingDefaults } from 'tollbooth/launcher'
import { LabError, validated } from './errors.js'
import { defaultLoadClient, httpClients, loopbackSourceAddresses, maxSourceAddresses } from './http/index.js'
import { defaultKneeCriteria, errorTotal, HealthzProbe, kneeOf, runLoad, searchKnee, startReferenceServer, type RunSegment } from './load/index.js'
import { labResultSchema, type KneeCriteria, type KneeResult, type KneeStep, type LabCommand, type LabResult, type LatencySummary, type LoadSpec, type SecondSample, type ServerSample, type SizingDeployment } from './result.js'
import { loadScenario, referencesFor, runScenarioSetup, scenarioRef, type Scenario, type ScenarioRef } from './scenarios/index.js'
import { seedServiceEnv, serviceSource, type ReplicaOptions } from './services/index.js'
import { measureFlow, sizingFlows, type FlowSettings, type SizingFlowName } from './sizing/index.js'
import { nowEpochMs } from './time.js'

export { seedServiceEnv } from './services/index.js'

/** Every hash strategy the service offers, in the order a comparison runs them: the seeds' fixes, then ours. */
export const allStrategies = ['event-loop', 'libuv', 'libuv-128', 'spawn', 'piscina', 'cluster', 'tollbooth'] as const

const positive = Type.Number({ exclusiveMinimum: 0, description: 'must be a number above 0' })
const stages = Type.Optional(Type.Array(Type.Object({ durationMs: Type.Number(), target: Type.Number() })))

/** What the user asked for (the flags of `--help`); anything unset comes from the scenario's defaults. */
const loadOptionsSchema = Type.Object({
  durationMs: Type.Optional(positive),
  vus: Type.Optional(Type.Integer({ minimum: 1, description: 'must be a whole number above 0' })),
  stages,
  rate: Type.Optional(positive),
  rateStages: stages,
  thinkTimeMs: Type.Optional(Type.Number()),
  maxInFlight: Type.Optional(positive),
  requestTimeoutMs: Type.Optional(positive),
  healthzProbeRate: Type.Optional(Type.Number()),
  workers: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, description: 'must be a whole number from 1 to 64' })),
  honourRetryAfter: Type.Optional(Type.Boolean()),
  accounts: Type.Optional(Type.Number()),
  sourceAddresses: Type.Optional(Type.Integer({ minimum: 1, maximum: maxSourceAddresses, description: `must be a whole number from 1 to ${maxSourceAddresses}` })),
  httpClient: Type.Optional(Type.Union(httpClients.map((client) => Type.Literal(client)), { description: `must be one of ${httpClients.join(', ')}` })),
})
export type LoadOptions = Static<typeof loadOptionsSchema>

export interface LabOptions {
  /** A built-in scenario's name, or a .json / .js file. */
  scenario: string
  /** A running service; unset: the lab starts its own. */
  target?: string | undefined
  /** With `target`: where its /metrics is (its admin listener, TOLLBOOTH_ADMIN_PORT); default the target. */
  metricsUrl?: string | undefined
  /**
   * With `target`: where the scenario's setup runs (its accounts, its tokens), default the target.
   * For a target that answers only the load's own routes, such as a bare reference server on the
   * same database and signing secret (bench:cheap), or one set to refuse nearly everything.
   */
  setupTarget?: string | undefined
  /** For services the lab starts: PostgreSQL to use instead of an embedded one. */
  databaseUrl?: string | undefined
  load: LoadOptions
  /** Environment for services the lab starts, over the seeds' bcrypt cost 10. */
  serviceEnv?: Record<string, string>
  /** `run` and `knee` with a lab-started service: its hash strategy (default tollbooth). */
  strategy?: string
  /** Services the lab starts: N replicas behind HAProxy, each under a CPU quota (`lab scale`: one run per count). */
  replicas?: ReplicaOptions | undefined
  commandLine?: string
  log?: (line: string) => void
  onSecond?: (label: string, sample: SecondSample, server: ServerSample | undefined) => void
  /** Aborting stops the load at once; the result so far is still returned, with a warning. */
  signal?: AbortSignal
}

export interface KneeOptions extends LabOptions {
  criteria?: Partial<KneeCriteria> & { maxRate?: number }
}

/** Closed-model clients: `polite` wait out a 503's Retry-After, `naive` retry at once (as k6 VUs in the seeds' scripts do). */
export type ClientKind = 'polite' | 'naive'
export const clientKinds: readonly ClientKind[] = ['polite', 'naive']

export interface CompareOptions extends LabOptions {
  strategies?: readonly string[]
  /** Each strategy is measured once per kind, in this order (default: as `load.honourRetryAfter` says). */
  clients?: readonly ClientKind[]
}

function checkChoices (values: readonly string[], choices: readonly string[], field: string): void {
  const unknown = values.find((value) => !choices.includes(value))
  if (unknown !== undefined) throw new LabError(`unknown ${field} "${unknown}": use ${choices.join(', ')}`, field)
}

/** The user's load options over the scenario's defaults, validated. */
export function resolveLoad (scenario: Scenario<unknown>, options: LoadOptions, forceModel?: 'open'): LoadSpec {
  validated(loadOptionsSchema, options)
  const wantsOpen = forceModel === 'open' || options.rate !== undefined || options.rateStages !== undefined
  const wantsClosed = options.vus !== undefined || options.stages !== undefined
  if (wantsOpen && wantsClosed) throw new LabError('give either virtual users (--vus / --stages) or an arrival rate (--rate / --rate-stages), not both', 'vus')
  const durationMs = options.durationMs ?? scenario.defaults.durationMs ?? 30_000
  const base = {
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    healthzProbeRate: options.healthzProbeRate ?? 10,
    healthzProbeTimes: 'random' as const,
    workers: options.workers ?? 1,
    httpClient: options.httpClient ?? defaultLoadClient,
    honourRetryAfter: options.honourRetryAfter ?? true,
    accounts: options.accounts ?? scenario.defaults.accounts,
  }
  if (wantsOpen || (!wantsClosed && scenario.defaults.model === 'open')) {
    if ((options.sourceAddresses ?? 1) > 1) throw new LabError('--source-addresses spreads a closed model\'s virtual users over addresses; an open model\'s arrivals (and a knee\'s steps) share one pool of connections', 'sourceAddresses')
    const startRate = options.rate ?? scenario.defaults.rate
    return { ...base, model: 'open', startRate, stages: options.rateStages ?? [{ durationMs, target: startRate }], maxInFlight: options.maxInFlight ?? 2000 }
  }
  // k6: `--vus N --duration D` holds N from the start; stages ramp from 0.
  const vus = options.vus ?? (options.stages === undefined ? scenario.defaults.vus : undefined)
  const stages = options.stages ?? (vus === undefined ? (scenario.defaults.stages?.(durationMs) ?? [{ durationMs, target: 1 }]) : [{ durationMs, target: vus }])
  const startVus = options.stages === undefined ? (vus ?? 0) : 0
  // No more addresses than users: the result says how many the service saw.
  const sourceAddresses = Math.min(options.sourceAddresses ?? scenario.defaults.sourceAddresses ?? 1, Math.max(1, startVus, ...stages.map((stage) => stage.target)))
  return { ...base, model: 'closed', startVus, stages, thinkTimeMs: options.thinkTimeMs ?? scenario.defaults.thinkTimeMs, ...(sourceAddresses > 1 ? { sourceAddresses } : {}) }
}

interface Command { scenario: Scenario<unknown>, ref: ScenarioRef, load: LoadSpec, result: LabResult }

async function prepare (command: LabCommand, options: LabOptions, forceModel?: 'open'): Promise<Command> {
  const ref = scenarioRef(options.scenario)
  const scenario = await loadScenario(ref)
  const load = resolveLoad(scenario, options.load, forceModel)
  const facts = machineFacts()
  const result: LabResult = {
    schema: labResultSchema,
    command,
    createdAt: new Date().toISOString(),
    commandLine: options.commandLine ?? `tollbooth lab ${command} --scenario ${options.scenario}`,
    // The CPU budget is the one the service would see.
    machine: { cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown CPU', cores: os.cpus().length, cpuBudget: facts.cpuBudget, memoryBytes: os.totalmem(), node: process.version, platform: os.platform(), arch: os.arch(), tollboothVersion: facts.serviceVersion },
    scenario: { name: scenario.name, description: scenario.description, endpoints: scenario.endpoints, ...(scenario.phases === undefined ? {} : { phases: scenario.phases }) },
    load,
    runs: [],
    references: referencesFor(scenario.name),
    warnings: [],
  }
  return { scenario, ref, load, result }
}

/**
 * Source addresses the service would not see, or the machine has not, are refused before anything
 * starts: a target they cannot reach (services the lab starts listen on 127.0.0.1); replicas,
 * whose HAProxy connects to them from its own address; a system other than Linux, where 127.0.0.1
 * may be the only loopback address.
 */
function checkSourceAddresses (options: LabOptions, planned: readonly PlannedRun[]): void {
  const { target } = options
  for (const { load, replicas = options.replicas } of planned) {
    if (load.sourceAddresses === undefined) continue
    if (target === undefined && replicas !== undefined) throw new LabError('--source-addresses with --replicas: HAProxy connects to the replicas from its own address, so they would see one client', 'sourceAddresses')
    if (os.platform() !== 'linux') throw new LabError(`--source-addresses needs Linux, where all of 127.0.0.0/8 is the loopback interface's (not ${os.platform()})`, 'sourceAddresses')
    if (target === undefined) continue
    try {
      loopbackSourceAddresses(target, load.sourceAddresses)
    } catch (err) {
      throw new LabError((err as Error).message, 'sourceAddresses')
    }
  }
}

/** One run of a command: its label (unset: the service's strategy) and the service it runs against. */
interface PlannedRun { label?: string, strategy: string, replicas?: ReplicaOptions | undefined, load: LoadSpec, clients?: ClientKind }

/**
 * The planned runs in turn, each against the target or a service the lab starts for it, all on
 * one database. `skipFailedStart` (compare): a strategy that does not start is a warning, not the end.
 */
async function series (command: Command, options: LabOptions, planned: PlannedRun[], skipFailedStart = false, segments?: (segment: RunSegment) => Promise<void>): Promise<LabResult> {
  const { scenario, result } = command
  const runId = randomBytes(6).toString('hex')
  checkSourceAddresses(options, planned)
  if (options.setupTarget !== undefined && options.target === undefined) throw new LabError('a setup target goes with a target: the services the lab starts run their own setup', 'setupTarget')
  const source = await serviceSource(options, scenario.needsLabDiagnostics === true, result.warnings)
  try {
    for (const [index, plan] of planned.entries()) {
      if (options.signal?.aborted === true) break
      if (result.command === 'compare') options.log?.(`== ${plan.label ?? plan.strategy} (${index + 1} of ${planned.length})`)
      const service = await source.start(plan.strategy, plan.replicas).catch((err: Error) => {
        if (!skipFailedStart) throw err
        result.warnings.push(`${plan.label ?? plan.strategy}: did not start: ${err.message.split('\n')[0] ?? ''}`)
      })
      if (service === undefined) continue
      const label = plan.label ?? service.info.strategy ?? result.command
      const { load } = plan
      try {
        const data = await runScenarioSetup(scenario, options.setupTarget ?? service.url, load.accounts, options.log ?? (() => {}), load.requestTimeoutMs)
        // Without `segments` (the knee's steps), the whole load once per phase.
        const measured = await runLoad({
          label,
          url: service.url,
          metricsUrl: service.metricsUrl,
          pid: service.pid,
          service: service.info,
          scenario: command.ref,
          endpointOrder: scenario.endpoints,
          data,
          load,
          runId: `${runId}${index}`,
          signal: options.signal,
          onSecond: (sample, server) => options.onSecond?.(label, sample, server),
        }, segments ?? (async (segment) => {
          for (const phase of scenario.phases ?? [undefined]) if (options.signal?.aborted !== true) await segment(phase, load)
        }))
        result.runs.push(plan.clients === undefined ? measured.run : { ...measured.run, clients: plan.clients })
        result.warnings.push(...measured.warnings)
      } finally {
        await service.stop()
      }
    }
  } finally {
    await source.close()
  }
  return result
}

/** `run` and `knee`: one service, the target or one the lab starts with `options.strategy`. */
async function single (command: Command, options: LabOptions, segments?: (segment: RunSegment) => Promise<void>): Promise<LabResult> {
  const strategy = options.strategy ?? 'tollbooth'
  if (options.target === undefined) checkChoices([strategy], allStrategies, 'strategy')
  return await series(command, options, [{ strategy, load: command.load }], false, segments)
}

/** One load against one service. */
export async function labRun (options: LabOptions): Promise<LabResult> {
  return await single(await prepare('run', options), options)
}

/** Rising open-model steps until the service falls behind. */
export async function labKnee (options: KneeOptions): Promise<LabResult> {
  const command = await prepare('knee', options, 'open')
  const { load, result } = command
  if (load.model !== 'open') throw new Error('unreachable: a knee search is an open model')
  const { maxRate = Number.POSITIVE_INFINITY, ...chosen } = options.criteria ?? {}
  const criteria: KneeCriteria = { ...defaultKneeCriteria, startRate: load.startRate, ...chosen }
  validated(Type.Object({ startRate: positive, stepFactor: positive, stepDurationMs: positive, maxSteps: positive }), criteria)
  const steps: KneeStep[] = []
  let search: KneeResult | undefined
  await single(command, options, async (runSegment) => {
    search = await searchKnee(criteria, maxRate, async (offered, index) => {
      const segment = await runSegment(undefined, { model: 'open', startRate: offered, stages: [{ durationMs: criteria.stepDurationMs, target: offered }], maxInFlight: load.maxInFlight })
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
  // The load as it ran: from the first step's rate to the last's, in the steps' time.
  const last = steps.at(-1)
  result.load = {
    ...load,
    startRate: steps[0]?.offeredPerSecond ?? criteria.startRate,
    stages: last === undefined ? [] : [{ durationMs: steps.length * criteria.stepDurationMs, target: last.offeredPerSecond }],
  }
  result.knee = search ?? { criteria, steps, kneePerSecond: kneeOf(steps), stoppedBecause: `interrupted after ${steps.length} steps` }
  return result
}

/** The same load against the service started once per strategy (and kind of clients), on one database. */
export async function labCompare (options: CompareOptions): Promise<LabResult> {
  if (options.target !== undefined) {
    throw new LabError('compare starts the service once per strategy itself: drop --target (use --database-url to measure on your own PostgreSQL)', 'target')
  }
  const strategies = options.strategies ?? allStrategies
  checkChoices(strategies, allStrategies, 'strategies')
  const command = await prepare('compare', options)
  const { load, result } = command
  const clients = options.clients ?? [load.honourRetryAfter ? 'polite' : 'naive']
  checkChoices(clients, clientKinds, 'clients')
  if (clients.length > 1) result.load.politeAndNaive = true
  // One kind of clients: the strategy's name alone; both: "tollbooth naive".
  const planned = strategies.flatMap((strategy) => clients.map((kind): PlannedRun => ({
    label: clients.length > 1 ? `${strategy} ${kind}` : strategy, strategy, load: { ...load, honourRetryAfter: kind === 'polite' }, clients: kind,
  })))
  return await series(command, options, planned, true)
}

/** `lab scale`: the same load against 1, 2, 3 ... replicas (each under the same CPU quota) on one database, as a comparison whose runs are the counts. */
export async function labScale (options: LabOptions & { replicaCounts: readonly number[] }): Promise<LabResult> {
  if (options.target !== undefined) throw new LabError('scale starts the replicas itself: drop --target', 'target')
  validated(Type.Array(positive), options.replicaCounts, 'replicas')
  const command = await prepare('compare', options)
  const cpusPerReplica = options.replicas?.cpusPerReplica
  return await series(command, options, options.replicaCounts.map((count) => ({
    label: `${count} replica${count === 1 ? '' : 's'}`, strategy: options.strategy ?? 'tollbooth', replicas: { count, cpusPerReplica }, load: command.load,
  })))
}

/**
 * The floor under /healthz figures on this machine as it is now: the empty reference server
 * probed alone for `durationMs`, at random times at `ratePerSecond`, as a run probes a service
 * and its floor. What a busy neighbour (a load, busy loops at some nice value) costs a probe shows
 * against the same measure taken idle.
 */
export async function labProbeFloor (options: { durationMs: number, ratePerSecond?: number, timeoutMs?: number }): Promise<{ healthz: LatencySummary, failures: number }> {
  validated(Type.Object({ durationMs: positive, ratePerSecond: Type.Optional(positive), timeoutMs: Type.Optional(positive) }), options)
  const server = await startReferenceServer()
  try {
    const probe = new HealthzProbe({ url: server.url, ratePerSecond: options.ratePerSecond ?? 10, runStartEpochMs: nowEpochMs(), timeoutMs: options.timeoutMs ?? 5000 })
    probe.start()
    // The measurement's length: the probes go out on their own schedule meanwhile.
    await sleep(options.durationMs)
    await probe.stop()
    const healthz = probe.summary()
    if (healthz === null || probe.error !== undefined) throw new Error(`the /healthz prober failed: ${probe.error ?? 'no probes'}`)
    return { healthz, failures: probe.failures + probe.skipped }
  } finally {
    await server.close()
  }
}

/** Where `lab sizing` measures when it starts the service itself: alone, and behind HAProxy as the launcher runs it. */
export type SizingDeploymentKind = 'alone' | 'haproxy'
export const sizingDeploymentKinds: readonly SizingDeploymentKind[] = ['alone', 'haproxy']
export const sizingFlowNames = Object.keys(sizingFlows) as SizingFlowName[]

export interface SizingOptions extends Omit<LabOptions, 'scenario' | 'strategy' | 'replicas' | 'setupTarget'> {
  /** The peak to plan for and the p99 of a login it must keep (`--peak 500/s --p99 1s`). */
  peak?: { perSecond: number, p99Ms?: number }
  /** Share of each replica's capacity kept free at the peak (default 0.3). */
  headroom?: number
  /** Replicas beyond what the peak needs (default 1: one may restart or fail at the peak). */
  spareReplicas?: number
  /** Replica sizes the plan is given for, in CPUs (default 1, 2, 4, 8). */
  cpusPerReplica?: readonly number[]
  /** Database sizes whose limit the plan gives, in CPUs (default 2, 4, 8, 16). */
  databaseCpus?: readonly number[]
  /** Offered load of the curve's steps as multiples of the knee (default 0.5, 1, 1.5, 2, 3). */
  multiples?: readonly number[]
  /** The curve's clients, each kind over every multiple (default naive, then polite). */
  clients?: readonly ClientKind[]
  flows?: readonly SizingFlowName[]
  /** Without a target: where the service runs (default alone, then behind HAProxy). */
  deployments?: readonly SizingDeploymentKind[]
  /** The knee's criteria but its start (each flow's start comes from a short closed-loop storm). */
  criteria?: Partial<Omit<KneeCriteria, 'startRate'>>
  /** A `GET /me` knee step fails when its p99 passes this (default 250 ms). */
  cheapP99LimitMs?: number
  /** An arrival of a curve step gives up this long after it came (default 5 s). */
  patienceMs?: number
  /** The closed-loop estimate before each knee search (default: a step's length). */
  estimateDurationMs?: number
}

/** The hash as a service started with `env` runs it: its algorithm's parameters, each marked when it is the default. */
export function describeHashParameters (env: Readonly<Record<string, string>>): string {
  const defaults = settingDefaults()
  const value = (name: string): string => env[name] ?? `${defaults[name] ?? '?'} (default)`
  const algorithm = env.TOLLBOOTH_HASH_ALGORITHM ?? defaults.TOLLBOOTH_HASH_ALGORITHM ?? 'argon2id'
  const parameters: Record<string, Array<[string, string]>> = {
    argon2id: [['memory KiB', 'TOLLBOOTH_ARGON2_MEMORY_KIB'], ['iterations', 'TOLLBOOTH_ARGON2_TIME_COST'], ['parallelism', 'TOLLBOOTH_ARGON2_PARALLELISM']],
    bcrypt: [['cost', 'TOLLBOOTH_BCRYPT_COST']],
    scrypt: [['N', 'TOLLBOOTH_SCRYPT_N'], ['r', 'TOLLBOOTH_SCRYPT_R'], ['p', 'TOLLBOOTH_SCRYPT_P']],
  }
  return `${algorithm}: ${(parameters[algorithm] ?? []).map(([label, name]) => `${label} ${value(name)}`).join(', ')}`
}

const sizingOptionsSchema = Type.Object({
  headroom: Type.Optional(Type.Number({ minimum: 0, exclusiveMaximum: 1, description: 'must be from 0 to below 1 (a share)' })),
  spareReplicas: Type.Optional(Type.Integer({ minimum: 0, description: 'must be a whole number from 0' })),
  cpusPerReplica: Type.Optional(Type.Array(positive, { minItems: 1 })),
  databaseCpus: Type.Optional(Type.Array(positive, { minItems: 1 })),
  multiples: Type.Optional(Type.Array(positive, { minItems: 1 })),
  cheapP99LimitMs: Type.Optional(positive),
  patienceMs: Type.Optional(positive),
  estimateDurationMs: Type.Optional(positive),
  peak: Type.Optional(Type.Object({ perSecond: positive, p99Ms: Type.Optional(positive) })),
})

/**
 * `lab sizing`: for each deployment (the target; or the service the lab starts, alone and behind
 * HAProxy) and each flow (logins, a crowd of `GET /me`), the knee and the overload curve with
 * naive and polite clients, and what PostgreSQL spent per request; the report turns them into a
 * sizing table (sizing/plan.ts). One database for the whole command, counting its statements.
 */
export async function labSizing (options: SizingOptions): Promise<LabResult> {
  validated(sizingOptionsSchema, Object.fromEntries(Object.entries(options).filter(([key]) => key in sizingOptionsSchema.properties)))
  const clients = options.clients ?? clientKinds.toReversed()
  checkChoices(clients, clientKinds, 'clients')
  const flows = options.flows ?? sizingFlowNames
  checkChoices(flows, sizingFlowNames, 'flows')
  const kinds = options.deployments ?? sizingDeploymentKinds
  checkChoices(kinds, sizingDeploymentKinds, 'deployments')
  const command = await prepare('sizing', { ...options, scenario: 'me-crowd', load: { ...options.load, rate: options.load.rate ?? 1 } }, 'open')
  const { load, result } = command
  const env = { ...seedServiceEnv, ...options.serviceEnv }
  const loginDeadlineMs = Number(env.TOLLBOOTH_LOGIN_DEADLINE_MS ?? settingDefaults().TOLLBOOTH_LOGIN_DEADLINE_MS)
  const stepDurationMs = options.criteria?.stepDurationMs ?? defaultKneeCriteria.stepDurationMs
  const criteria = { ...defaultKneeCriteria, maxSteps: 12, ...options.criteria }
  validated(Type.Object({ stepFactor: positive, stepDurationMs: positive, maxSteps: positive }), criteria)
  const loginP99Ms = options.peak?.p99Ms ?? (options.target === undefined ? loginDeadlineMs : defaultKneeCriteria.p99LimitMs)
  const flowNames = flows.map((flow) => sizingFlows[flow].name)
  result.scenario = {
    name: 'sizing',
    description: `The knee and the overload curve of ${flowNames.join(' and of ')}, with naive and polite clients, and what PostgreSQL spends per request.`,
    endpoints: flows.map((flow) => sizingFlows[flow].endpoint),
  }
  result.sizing = {
    hashParameters: options.target === undefined ? describeHashParameters(env) : 'as the target is configured (its algorithm under Service below)',
    tls: 'nowhere: plain HTTP on the loopback interface, so no figure includes TLS',
    generatorPlace: 'this machine, beside the service and PostgreSQL (their CPUs are shared); its CPU per step is in the curve',
    peak: options.peak === undefined ? null : { perSecond: options.peak.perSecond, p99Ms: loginP99Ms },
    headroom: options.headroom ?? 0.3,
    spareReplicas: options.spareReplicas ?? 1,
    cpusPerReplica: [...(options.cpusPerReplica ?? [1, 2, 4, 8])],
    databaseCpus: [...(options.databaseCpus ?? [2, 4, 8, 16])],
    multiples: [...(options.multiples ?? [0.5, 1, 1.5, 2, 3])],
    stepDurationMs,
    patienceMs: options.patienceMs ?? 5000,
    deployments: [],
  }
  const sizing = result.sizing
  const settingsOf = (flow: SizingFlowName): FlowSettings => ({
    stepDurationMs,
    estimateDurationMs: options.estimateDurationMs ?? stepDurationMs,
    multiples: sizing.multiples,
    clients,
    patienceMs: sizing.patienceMs,
    criteria: { ...criteria, p99LimitMs: flow === 'login' ? loginP99Ms : (options.cheapP99LimitMs ?? 250) },
    startShare: 0.7,
    maxInFlight: load.model === 'open' ? load.maxInFlight : 2000,
    accounts: options.load.accounts ?? 50,
  })
  const planned: Array<SizingDeployment['kind']> = options.target === undefined ? [...kinds] : ['target']
  const runId = randomBytes(6).toString('hex')
  const log = options.log ?? (() => {})
  const aborted = (): boolean => options.signal?.aborted === true
  const source = await serviceSource({ ...options, databaseStatistics: true }, false, result.warnings)
  try {
    for (const kind of planned) {
      if (aborted()) break
      const service = await source.start('tollbooth', kind === 'haproxy' ? { count: 1 } : undefined).catch((err: Error) => {
        if (kind !== 'haproxy') throw err
        result.warnings.push(`behind HAProxy: not measured: ${err.message.split('\n')[0] ?? ''}`)
      })
      if (service === undefined) continue
      const deployment: SizingDeployment = {
        kind,
        description: kind === 'alone' ? 'one service, the clients connect to it directly' : kind === 'haproxy' ? `one service behind HAProxy (${service.info.settings.replicas ?? 'the launcher\'s configuration'})` : `the target ${service.url}`,
        flows: [],
      }
      sizing.deployments.push(deployment)
      try {
        for (const flow of flows) {
          if (aborted()) break
          const label = `${kind === 'alone' ? 'alone' : kind === 'haproxy' ? 'HAProxy' : 'target'}: ${sizingFlows[flow].name}`
          const measured = await measureFlow(flow, {
            label,
            url: service.url,
            metricsUrl: service.metricsUrl,
            pid: service.pid,
            service: service.info,
            databaseUrl: source.databaseUrl,
            load,
            runId: `${runId}${result.runs.length}`,
            log,
            signal: options.signal,
            onSecond: (sample, server) => options.onSecond?.(label, sample, server),
          }, settingsOf(flow))
          deployment.flows.push({ ...measured.figures, run: result.runs.length })
          result.runs.push(measured.run)
          result.warnings.push(...measured.warnings)
        }
      } finally {
        await service.stop()
      }
    }
  } finally {
    await source.close()
  }
  return result
}
