/**
 * `lab sizing` as a library call: for each deployment and flow, the measurements of measure.ts,
 * collected into one LabResult whose `sizing` the report turns into a plan (plan.ts).
 */
import { randomBytes } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { recommendedHaproxyLimits, settingDefaults } from 'tollbooth/launcher'
import { validated } from '../errors.js'
import { defaultKneeCriteria } from '../load/index.js'
import { checkChoices, clientKinds, positive, prepare, type ClientKind, type LabOptions } from '../options.js'
import type { KneeCriteria, LabResult, SizingDeployment } from '../result.js'
import { seedServiceEnv, serviceSource } from '../services/index.js'
import { measureFlow, sizingFlows, type FlowSettings, type SizingFlowName } from './measure.js'

/** Where `lab sizing` measures when it starts the service itself: alone, and behind HAProxy as the launcher runs it. */
type SizingDeploymentKind = 'alone' | 'haproxy'
export const sizingDeploymentKinds: readonly SizingDeploymentKind[] = ['alone', 'haproxy']
const sizingFlowNames = Object.keys(sizingFlows) as SizingFlowName[]

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
        description: kind === 'alone' ? 'one service, the clients connect to it directly' : kind === 'haproxy' ? `one service behind HAProxy with the recommended limits (per replica ${recommendedHaproxyLimits.maxConnPerReplica} connections, a queue of ${recommendedHaproxyLimits.queuePerReplica} for ${recommendedHaproxyLimits.queueTimeoutMs} ms; ${service.info.settings.replicas ?? 'the launcher\'s configuration'})` : `the target ${service.url}`,
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
