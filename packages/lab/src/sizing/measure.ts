/**
 * `lab sizing`'s measurements against one service (a target, or one the lab starts alone or
 * behind HAProxy): for each flow (logins, then a crowd of `GET /me`), a short closed-loop storm
 * for a first estimate, the knee search (load/knee.ts) from below it, then the overload curve:
 * constant-rate steps at multiples of the knee, with naive clients and with polite ones. What
 * PostgreSQL spent is read around every knee step (statements, WAL, CPU of its processes).
 */
import { openDatabaseMeter, type DatabaseActivity, type DatabaseMeter } from 'tollbooth/launcher'
import { errorTotal, kneeOf, runLoad, searchKnee, type RunSegment } from '../load/index.js'
import type { CurveStep, DatabaseCost, KneeCriteria, KneeResult, KneeStep, LoadSpec, RunResult, SecondSample, ServerSample, ServiceInfo, SizingFlow } from '../result.js'
import { loadScenario, runScenarioSetup, type ScenarioRef } from '../scenarios/index.js'
import { parentPid, processTreeUsage } from '../services/index.js'

/** The flows a sizing measures: the scenario that drives each, its endpoint, and the closed-loop storm of its estimate. */
export const sizingFlows = {
  login: { scenario: 'login-storm', endpoint: 'POST /auth/login', name: 'logins', estimateVus: 32 },
  me: { scenario: 'me-crowd', endpoint: 'GET /me', name: 'GET /me', estimateVus: 64 },
} as const

export type SizingFlowName = keyof typeof sizingFlows

export interface FlowSettings {
  stepDurationMs: number
  /** The closed-loop estimate's length. */
  estimateDurationMs: number
  multiples: readonly number[]
  clients: ReadonlyArray<'naive' | 'polite'>
  patienceMs: number
  /** The knee's criteria but its start rate (which comes from the estimate). */
  criteria: Omit<KneeCriteria, 'startRate'>
  /** The knee search starts at this share of the estimate. */
  startShare: number
  maxInFlight: number
  accounts: number
}

export interface FlowTarget {
  label: string
  url: string
  metricsUrl: string
  pid: number | undefined
  service: ServiceInfo
  /** Where PostgreSQL's statistics are read; undefined: the database's cost is not measured. */
  databaseUrl: string | undefined
  load: LoadSpec
  runId: string
  log: (line: string) => void
  signal?: AbortSignal | undefined
  onSecond?: ((sample: SecondSample, server: ServerSample | undefined) => void) | undefined
}

/** One reading of PostgreSQL: its counters, and its processes' CPU when they are on this machine. */
interface DatabaseReading { activity: DatabaseActivity, cpuSeconds: number | null }

/** Reads the database around the knee's steps; says why not, instead, when it cannot. */
class DatabaseCounter {
  private readonly held: Array<DatabaseCost & { operations: number }> = []
  private seconds = 0
  note: string | undefined

  private constructor (private readonly meter: DatabaseMeter | undefined, private readonly postmasterPid: number | null, note: string | undefined) {
    this.note = note
  }

  static async open (databaseUrl: string | undefined): Promise<DatabaseCounter> {
    if (databaseUrl === undefined) return new DatabaseCounter(undefined, null, 'not measured: the lab does not know the database of a target (give --database-url)')
    try {
      const meter = await openDatabaseMeter(databaseUrl)
      const first = await meter.read()
      const postmaster = parentPid(first.backendPid)
      const notes = [
        first.statements === null ? 'statements not counted: pg_stat_statements is not installed in the database' : undefined,
        postmaster === null ? 'CPU not measured: PostgreSQL\'s processes are not on this machine' : undefined,
      ].filter((note) => note !== undefined)
      return new DatabaseCounter(meter, postmaster, notes.length === 0 ? undefined : notes.join('; '))
    } catch (err) {
      return new DatabaseCounter(undefined, null, `not measured: ${(err as Error).message}`)
    }
  }

  async read (): Promise<DatabaseReading | undefined> {
    if (this.meter === undefined) return undefined
    const activity = await this.meter.read()
    const tree = this.postmasterPid === null ? null : processTreeUsage(this.postmasterPid)
    return { activity, cpuSeconds: tree?.cpuSeconds ?? null }
  }

  /** A step that held: what the database did between the two readings, for `operations` successful requests. */
  add (before: DatabaseReading | undefined, after: DatabaseReading | undefined, operations: number, seconds: number): void {
    if (before === undefined || after === undefined || operations <= 0) return
    const minus = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : a - b)
    this.held.push({
      statements: minus(after.activity.statements, before.activity.statements),
      walBytes: after.activity.walBytes - before.activity.walBytes,
      cpuSeconds: minus(after.cpuSeconds, before.cpuSeconds),
      operations,
    })
    this.seconds += seconds
  }

  /** Per successful request, over every step added. */
  perOperation (): SizingFlow['database'] {
    const operations = this.held.reduce((sum, step) => sum + step.operations, 0)
    if (operations === 0) {
      this.note ??= 'not measured: no knee step held'
      return null
    }
    const sum = (pick: (step: DatabaseCost) => number | null): number | null =>
      this.held.some((step) => pick(step) === null) ? null : this.held.reduce((total, step) => total + (pick(step) ?? 0), 0)
    const per = (total: number | null): number | null => (total === null ? null : total / operations)
    return { statements: per(sum((step) => step.statements)), walBytes: (sum((step) => step.walBytes) ?? 0) / operations, cpuSeconds: per(sum((step) => step.cpuSeconds)), operations, seconds: this.seconds }
  }

  async close (): Promise<void> {
    await this.meter?.close().catch(() => {})
  }
}

const round = (value: number, places: number): number => Math.round(value * 10 ** places) / 10 ** places

function constantRate (rate: number, durationMs: number, maxInFlight: number, retry?: { clients: 'naive' | 'polite', patienceMs: number }) {
  return { model: 'open' as const, startRate: rate, stages: [{ durationMs, target: rate }], maxInFlight, ...(retry === undefined ? {} : { retry }) }
}

/**
 * One flow against one service: its setup, then one run of the load (so its seconds and the
 * server's signals are kept whole) whose segments are the estimate, the knee's steps and the
 * curve's. Resolves with the run and the flow's figures (its `run` index is the caller's).
 */
export async function measureFlow (flow: SizingFlowName, target: FlowTarget, settings: FlowSettings): Promise<{ run: RunResult, warnings: string[], figures: Omit<SizingFlow, 'run'> }> {
  const { scenario: scenarioName, endpoint, estimateVus } = sizingFlows[flow]
  const ref: ScenarioRef = { builtin: scenarioName }
  const scenario = await loadScenario(ref)
  const data = await runScenarioSetup(scenario, { url: target.url, accounts: settings.accounts, log: target.log, timeoutMs: target.load.requestTimeoutMs })
  const database = await DatabaseCounter.open(target.databaseUrl)
  const stepSeconds = settings.stepDurationMs / 1000
  let estimate: SizingFlow['estimate'] = { vus: estimateVus, durationMs: settings.estimateDurationMs, achievedPerSecond: 0 }
  const kneeSteps: KneeStep[] = []
  let knee: KneeResult | undefined
  const cpuByStep = new Map<number, number | null>()
  const curve: CurveStep[] = []
  const aborted = (): boolean => target.signal?.aborted === true
  try {
    const measured = await runLoad({
      label: target.label,
      url: target.url,
      metricsUrl: target.metricsUrl,
      pid: target.pid,
      service: target.service,
      scenario: ref,
      endpointOrder: scenario.endpoints,
      data,
      load: target.load,
      runId: target.runId,
      signal: target.signal,
      onSecond: target.onSecond,
    }, async (runSegment: RunSegment) => {
      const closed = await runSegment(undefined, { model: 'closed', startVus: estimateVus, stages: [{ durationMs: settings.estimateDurationMs, target: estimateVus }], thinkTimeMs: 0, honourRetryAfter: true })
      estimate = { ...estimate, achievedPerSecond: round(closed.achievedInWindow / (settings.estimateDurationMs / 1000), 2) }
      target.log(`${target.label}: closed-loop estimate ${estimate.achievedPerSecond}/s (${estimateVus} users, ${settings.estimateDurationMs / 1000} s)`)
      if (estimate.achievedPerSecond <= 0 || aborted()) return
      const search = async (startRate: number): Promise<KneeResult> => await searchKnee({ ...settings.criteria, startRate }, Number.POSITIVE_INFINITY, async (offered, index) => {
        const before = await database.read()
        const segment = await runSegment(undefined, constantRate(offered, settings.stepDurationMs, settings.maxInFlight))
        const after = await database.read()
        cpuByStep.set(index, segment.serviceCpuCores)
        const errorRate = segment.all.requests === 0 ? 0 : errorTotal(segment.all.errors) / segment.all.requests
        // Only steps the service kept up with count towards the cost per request.
        if (errorRate <= settings.criteria.errorRateLimit) database.add(before, after, segment.all.ok, stepSeconds)
        return {
          index,
          offeredPerSecond: offered,
          achievedPerSecond: round(segment.achievedInWindow / stepSeconds, 2),
          latency: segment.all.latency,
          errorRate,
          dropped: segment.dropped,
          startT: segment.startT,
          endT: segment.endT,
        }
      }, kneeSteps, (line) => { target.log(`${target.label}: knee ${line}`) })
      const startRate = Math.max(1, round(estimate.achievedPerSecond * settings.startShare, 2))
      knee = await search(startRate)
      // A first step that failed says only that the knee is lower: once more from half as high.
      if (knee.kneePerSecond === null && !aborted()) {
        target.log(`${target.label}: the knee's first step failed; searching again from ${round(startRate / 2, 2)}/s`)
        kneeSteps.length = 0
        knee = await search(Math.max(1, round(startRate / 2, 2)))
      }
      const capacity = knee.kneePerSecond
      if (capacity === null) return
      for (const clients of settings.clients) {
        for (const multiple of settings.multiples) {
          if (aborted()) return
          const offered = round(capacity * multiple, 2)
          const segment = await runSegment(undefined, constantRate(offered, settings.stepDurationMs, settings.maxInFlight, { clients, patienceMs: settings.patienceMs }))
          const step: CurveStep = {
            multiple,
            clients,
            offeredPerSecond: offered,
            goodputPerSecond: round(segment.achievedInWindow / stepSeconds, 2),
            okLatency: segment.all.okLatency,
            attemptsPerArrival: segment.started === 0 ? null : round(segment.all.requests / segment.started, 3),
            shedRate: segment.all.requests === 0 ? 0 : round(segment.all.errors.overloaded / segment.all.requests, 4),
            failedArrivals: segment.started === 0 ? 0 : round(1 - segment.achieved / segment.started, 4),
            timeouts: segment.all.errors.timeouts,
            dropped: segment.dropped,
            healthz: segment.healthz,
            serviceCpuCores: segment.serviceCpuCores,
            labCpuCores: segment.labCpuCores,
            startT: segment.startT,
            endT: segment.endT,
          }
          curve.push(step)
          target.log(`${target.label}: ${clients} ${multiple}x (${offered}/s): goodput ${step.goodputPerSecond}/s, ok p99 ${step.okLatency.p99Ms ?? '—'} ms, shed ${(step.shedRate * 100).toFixed(1)} %, /healthz p99 ${step.healthz?.p99Ms ?? '—'} ms`)
        }
      }
    })
    const kneeResult = knee ?? { criteria: { ...settings.criteria, startRate: 0 }, steps: kneeSteps, kneePerSecond: kneeOf(kneeSteps), stoppedBecause: estimate.achievedPerSecond <= 0 ? 'the closed-loop estimate served nothing' : 'interrupted' }
    const kneeIndex = kneeResult.steps.findIndex((step) => step.held && step.offeredPerSecond === kneeResult.kneePerSecond)
    const cost = database.perOperation()
    return {
      run: measured.run,
      warnings: measured.warnings,
      figures: {
        flow,
        endpoint,
        estimate,
        knee: kneeResult,
        serviceCpuCoresAtKnee: kneeIndex === -1 ? null : (cpuByStep.get(kneeIndex) ?? null),
        curve,
        database: cost,
        ...(database.note === undefined ? {} : { databaseNote: database.note }),
      },
    }
  } finally {
    await database.close()
  }
}
