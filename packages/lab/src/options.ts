/**
 * The options every lab command shares, checked once (the facade validates, the rooms trust), and
 * the head of every command's result: what ran, on what machine, with what load.
 */
import os from 'node:os'
import { Type, type Static } from '@sinclair/typebox'
import { machineFacts } from 'tollbooth/launcher'
import { LabError, validated } from './errors.js'
import { defaultLoadClient, httpClients, maxSourceAddresses } from './http/index.js'
import { labResultSchema, type KneeCriteria, type LabCommand, type LabResult, type LoadSpec, type SecondSample, type ServerSample } from './result.js'
import { loadScenario, referencesFor, scenarioRef, type Scenario, type ScenarioRef } from './scenarios/index.js'
import type { ReplicaOptions } from './services/index.js'

export const positive = Type.Number({ exclusiveMinimum: 0, description: 'must be a number above 0' })
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
  passkeyShare: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'must be a share from 0 to 100 %' })),
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
  /** Several scenarios, each run in turn (`scenario` is then ignored); default strategies then: tollbooth alone. */
  scenarios?: readonly string[]
  strategies?: readonly string[]
  /** Each strategy is measured once per kind, in this order (default: as `load.honourRetryAfter` says). */
  clients?: readonly ClientKind[]
}

export function checkChoices (values: readonly string[], choices: readonly string[], field: string): void {
  const unknown = values.find((value) => !choices.includes(value))
  if (unknown !== undefined) throw new LabError(`unknown ${field} "${unknown}": use ${choices.join(', ')}`, field)
}

/** The user's load options over the scenario's defaults, validated. */
export function resolveLoad (scenario: Scenario<unknown>, options: LoadOptions, forceModel?: 'open'): LoadSpec {
  validated(loadOptionsSchema, options)
  if (options.passkeyShare !== undefined && scenario.defaults.passkeyShare === undefined) throw new LabError(`--passkey-share is for a scenario with passkey and password users (mixed-storm), not ${scenario.name}`, 'passkeyShare')
  const passkeyShare = options.passkeyShare ?? scenario.defaults.passkeyShare
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
    ...(passkeyShare === undefined ? {} : { passkeyShare }),
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

/**
 * With autogroups on, the service's hash threads (nice 10) do not yield to a process of another
 * session, and each session gets an equal share first: its figures are not those of a dedicated machine.
 */
const autogroupWarning = 'scheduler autogroups are on (kernel.sched_autogroup_enabled = 1): nice values count only inside a session, so processes of other sessions take CPU from the hash threads; measure with `sysctl kernel.sched_autogroup_enabled=0` (packages/service/bench/README.md)'

export interface Command { scenario: Scenario<unknown>, ref: ScenarioRef, load: LoadSpec, result: LabResult }

export async function prepare (command: LabCommand, options: LabOptions, forceModel?: 'open'): Promise<Command> {
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
    machine: { cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown CPU', cores: os.cpus().length, cpuBudget: facts.cpuBudget, schedulerAutogroups: facts.schedulerAutogroups, memoryBytes: os.totalmem(), node: process.version, platform: os.platform(), arch: os.arch(), tollboothVersion: facts.serviceVersion },
    scenario: { name: scenario.name, description: scenario.description, endpoints: scenario.endpoints, ...(scenario.phases === undefined ? {} : { phases: scenario.phases }) },
    load,
    runs: [],
    references: referencesFor(scenario.name),
    warnings: facts.schedulerAutogroups === true ? [autogroupWarning] : [],
  }
  return { scenario, ref, load, result }
}
