/**
 * The lab's face (`@tollbooth/lab`): its commands as library calls (run, knee, compare, scale; sizing in sizing/),
 * each returning one LabResult, and the probe floor. Options are checked here, once; the rooms
 * below trust them. Without a target the lab starts what it measures (on one database for the
 * whole command) and stops it after.
 */
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { Type } from '@sinclair/typebox'
import { LabError, validated } from './errors.js'
import { loopbackSourceAddresses } from './http/index.js'
import { defaultKneeCriteria, errorTotal, HealthzProbe, kneeOf, runLoad, searchKnee, startReferenceServer, type RunSegment } from './load/index.js'
import { checkChoices, clientKinds, positive, prepare, type ClientKind, type Command, type CompareOptions, type KneeOptions, type LabOptions } from './options.js'
import type { KneeCriteria, KneeResult, KneeStep, LabResult, LatencySummary, LoadSpec } from './result.js'
import { runScenarioSetup } from './scenarios/index.js'
import { adminCommandEnv, serviceSource, type ReplicaOptions } from './services/index.js'
import { nowEpochMs } from './time.js'

export { clientKinds, resolveLoad, type ClientKind, type CompareOptions, type KneeOptions, type LabOptions, type LoadOptions } from './options.js'
export { seedServiceEnv } from './services/index.js'
export { describeHashParameters, labSizing, sizingDeploymentKinds, type SizingOptions } from './sizing/index.js'

/** Every hash strategy the service offers, in the order a comparison runs them: the seeds' fixes, then ours. */
export const allStrategies = ['event-loop', 'libuv', 'libuv-128', 'spawn', 'piscina', 'cluster', 'tollbooth'] as const

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

/**
 * One run of a command: its label (unset: the service's strategy), the service it runs against,
 * and (a compare of several scenarios) its own scenario, else the command's.
 */
interface PlannedRun { label?: string, strategy: string, replicas?: ReplicaOptions | undefined, load: LoadSpec, clients?: ClientKind, scenario?: Pick<Command, 'scenario' | 'ref'> }

/**
 * The planned runs in turn, each against the target or a service the lab starts for it, all on
 * one database. `skipFailedStart` (compare): a strategy that does not start is a warning, not the end.
 */
async function series (command: Command, options: LabOptions, planned: PlannedRun[], skipFailedStart = false, segments?: (segment: RunSegment) => Promise<void>): Promise<LabResult> {
  const { scenario, result } = command
  const runId = randomBytes(6).toString('hex')
  checkSourceAddresses(options, planned)
  if (options.setupTarget !== undefined && options.target === undefined) throw new LabError('a setup target goes with a target: the services the lab starts run their own setup', 'setupTarget')
  const scenarios = planned.map((plan) => plan.scenario?.scenario ?? scenario)
  const needsLabDiagnostics = scenarios.some((each) => each.needsLabDiagnostics === true)
  // Every service of the command with every scenario's settings: a compare's runs differ by scenario alone.
  const scenarioEnv = Object.assign({}, ...scenarios.map((each) => each.serviceEnv)) as Record<string, string>
  const source = await serviceSource({ ...options, serviceEnv: { ...scenarioEnv, ...options.serviceEnv } }, needsLabDiagnostics, result.warnings)
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
      const { scenario: planScenario, ref } = plan.scenario ?? command
      try {
        const data = await runScenarioSetup(planScenario, { url: options.setupTarget ?? service.url, accounts: load.accounts, log: options.log ?? (() => {}), timeoutMs: load.requestTimeoutMs, passkeyShare: load.passkeyShare, adminEnv: source.databaseUrl === undefined ? undefined : adminCommandEnv(source.databaseUrl) })
        // Without `segments` (the knee's steps), the whole load once per phase.
        const measured = await runLoad({
          label,
          url: service.url,
          metricsUrl: service.metricsUrl,
          pid: service.pid,
          service: service.info,
          scenario: ref,
          endpointOrder: planScenario.endpoints,
          data,
          load,
          runId: `${runId}${index}`,
          signal: options.signal,
          onSecond: (sample, server) => options.onSecond?.(label, sample, server),
        }, segments ?? (async (segment) => {
          for (const phase of planScenario.phases ?? [undefined]) if (options.signal?.aborted !== true) await segment(phase, load)
        }))
        result.runs.push({
          ...measured.run,
          ...(plan.clients === undefined ? {} : { clients: plan.clients }),
          ...(plan.scenario === undefined ? {} : { scenario: planScenario.name, load }),
        })
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

/**
 * The same load against the service started once per strategy (and kind of clients), on one
 * database; with several scenarios, each scenario's own load in turn (by default on tollbooth alone).
 */
export async function labCompare (options: CompareOptions): Promise<LabResult> {
  if (options.target !== undefined) {
    throw new LabError('compare starts the service once per strategy itself: drop --target (use --database-url to measure on your own PostgreSQL)', 'target')
  }
  const scenarioNames = options.scenarios ?? [options.scenario]
  if (scenarioNames.length === 0) throw new LabError('compare needs a scenario', 'scenario')
  const repeated = scenarioNames.find((name, index) => scenarioNames.indexOf(name) !== index)
  if (repeated !== undefined) throw new LabError(`scenario "${repeated}" is named twice`, 'scenario')
  const several = scenarioNames.length > 1
  const strategies = options.strategies ?? (several ? ['tollbooth'] : allStrategies)
  checkChoices(strategies, allStrategies, 'strategies')
  const commands: Command[] = []
  for (const name of scenarioNames) commands.push(await prepare('compare', { ...options, scenario: name }))
  const [command] = commands
  if (command === undefined) throw new Error('unreachable: at least one scenario')
  const { load, result } = command
  const clients = options.clients ?? [load.honourRetryAfter ? 'polite' : 'naive']
  checkChoices(clients, clientKinds, 'clients')
  if (clients.length > 1) for (const { load } of commands) load.politeAndNaive = true
  if (several) {
    result.scenarios = commands.map((each) => each.result.scenario)
    result.references = commands.flatMap((each) => each.result.references)
  }
  // The label names what differs between runs: the scenario, the strategy, the kind of clients ("login-storm tollbooth naive").
  const planned = commands.flatMap((each) => strategies.flatMap((strategy) => clients.map((kind): PlannedRun => ({
    label: [several ? each.scenario.name : undefined, !several || strategies.length > 1 ? strategy : undefined, clients.length > 1 ? kind : undefined].filter((part) => part !== undefined).join(' '),
    strategy,
    load: { ...each.load, honourRetryAfter: kind === 'polite' },
    clients: kind,
    ...(several ? { scenario: each } : {}),
  }))))
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
    const probe = startHealthzProbe({ url: server.url, ratePerSecond: options.ratePerSecond, timeoutMs: options.timeoutMs })
    // The measurement's length: the probes go out on their own schedule meanwhile.
    await sleep(options.durationMs)
    return await probe.stop()
  } finally {
    await server.close()
  }
}

/**
 * Probes `url`'s /healthz at random times (`ratePerSecond`, default 10) until stopped, beside
 * whatever else runs: where a load's own probe does not go (a replica behind a load balancer,
 * probed straight as a kubelet or the balancer's own checks probe it).
 */
export function startHealthzProbe (options: { url: string, ratePerSecond?: number | undefined, timeoutMs?: number | undefined }): { stop: () => Promise<{ healthz: LatencySummary, failures: number }> } {
  const probe = new HealthzProbe({ url: options.url, ratePerSecond: options.ratePerSecond ?? 10, runStartEpochMs: nowEpochMs(), timeoutMs: options.timeoutMs ?? 5000 })
  probe.start()
  return {
    async stop () {
      await probe.stop()
      const healthz = probe.summary()
      if (healthz === null || probe.error !== undefined) throw new Error(`the /healthz prober failed: ${probe.error ?? 'no probes'}`)
      return { healthz, failures: probe.failures + probe.skipped }
    },
  }
}
