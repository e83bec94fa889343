/**
 * `lab sizing`'s report as data: what every figure was measured with, the knees, each flow's
 * overload curve, the replica plan for the peak asked for and the database's limit (the
 * arithmetic: sizing/plan.ts), and what to do past that limit. Text and HTML draw them alike.
 */
import type { CurveStep, LabResult, SizingDeployment, SizingFlow, SizingResult } from '../result.js'
import { databaseAtPeak, databaseLimits, planReplicas, ratePerCpu, type DatabaseLimit, type ReplicaPlan } from '../sizing/index.js'
import type { Fact } from './describe.js'
import { formatCores, formatCount, formatDuration, formatMs, formatPercent, formatRate } from './format.js'
import { left, msColumns, right, table, type Table } from './tables.js'

const deploymentNames: Record<SizingDeployment['kind'], string> = { alone: 'service alone', haproxy: 'behind HAProxy', target: 'target' }
const flowNames: Record<SizingFlow['flow'], string> = { login: 'logins', me: 'GET /me' }

/** "service alone, logins". */
export function flowTitle (deployment: SizingDeployment, flow: SizingFlow): string {
  return `${deploymentNames[deployment.kind]}, ${flowNames[flow.flow]}`
}

/** Every flow with its deployment, in the order they ran. */
export function sizingFlowsOf (sizing: SizingResult): Array<{ deployment: SizingDeployment, flow: SizingFlow }> {
  return sizing.deployments.flatMap((deployment) => deployment.flows.map((flow) => ({ deployment, flow })))
}

function bytes (value: number | null): string {
  if (value === null || !Number.isFinite(value)) return '—'
  return value >= 1048576 ? `${(value / 1048576).toFixed(1)} MiB` : value >= 1024 ? `${(value / 1024).toFixed(1)} KiB` : `${Math.round(value)} B`
}

function runSeconds (result: LabResult): number {
  return result.runs.reduce((sum, run) => sum + run.durationMs, 0) / 1000
}

/** What every figure of the report was measured with. */
export function sizingFacts (result: LabResult, sizing: SizingResult): Fact[] {
  const { machine } = result
  const lab = sizingFlowsOf(sizing).flatMap(({ flow }) => flow.curve.map((step) => step.labCpuCores))
  return [
    { label: 'hash', value: sizing.hashParameters },
    { label: 'CPU', value: `${machine.cpuModel}, ${machine.cores} cores (the service's budget: ${formatCores(machine.cpuBudget.cpus)}, from ${machine.cpuBudget.source})` },
    { label: 'TLS', value: sizing.tls },
    { label: 'flows', value: sizingFlowsOf(sizing).map(({ deployment, flow }) => `${flowTitle(deployment, flow)} (${flow.endpoint})`).join('; ') },
    {
      label: 'run length',
      value: `${formatDuration(runSeconds(result) * 1000)} of load in all: per flow a ${formatDuration(sizingFlowsOf(sizing)[0]?.flow.estimate.durationMs ?? 0)} closed-loop estimate, ` +
        `knee steps and curve steps of ${formatDuration(sizing.stepDurationMs)} each (a curve's arrival gives up after ${formatDuration(sizing.patienceMs)})`,
    },
    { label: 'load generator', value: `${sizing.generatorPlace}; the lab process used ${lab.length === 0 ? '—' : `${formatCores(Math.min(...lab))} to ${formatCores(Math.max(...lab))}`} cores per curve step` },
  ]
}

/** One row per deployment and flow: its estimate, its knee, the CPU the service used there and the rate per CPU. */
export function kneesTable (sizing: SizingResult): Table {
  return table<{ deployment: SizingDeployment, flow: SizingFlow }>([
    left('measured', ({ deployment, flow }) => flowTitle(deployment, flow)),
    right('closed-loop/s', ({ flow }) => formatRate(flow.estimate.achievedPerSecond), 'what a closed loop of virtual users achieved before the knee search (its start comes from it)'),
    right('knee/s', ({ flow }) => formatRate(flow.knee.kneePerSecond), 'the highest constant rate that held: achieved within the margin, p99 under the limit, errors under the limit'),
    right('p99 limit', ({ flow }) => `${formatMs(flow.knee.criteria.p99LimitMs)} ms`),
    right('cores at knee', ({ flow }) => formatCores(flow.serviceCpuCoresAtKnee), 'the service\'s mean CPU during the knee\'s step'),
    right('per vCPU/s', ({ flow }) => formatRate(ratePerCpu(flow.knee.kneePerSecond, flow.serviceCpuCoresAtKnee)), 'knee ÷ the cores the service used there'),
    left('knee search stopped because', ({ flow }) => flow.knee.stoppedBecause, 60),
  ], sizingFlowsOf(sizing))
}

/** One flow's overload curve: each kind of clients over the multiples, as they ran. */
export function curveTable (flow: SizingFlow): Table {
  const capacity = flow.knee.kneePerSecond
  return table<CurveStep>([
    left('clients', (step) => step.clients),
    right('× knee', (step) => `${step.multiple}×`),
    right('offered/s', (step) => formatRate(step.offeredPerSecond)),
    right('goodput/s', (step) => formatRate(step.goodputPerSecond), 'arrivals that succeeded within the step, per second'),
    right('÷ knee', (step) => (capacity === null ? '—' : (step.goodputPerSecond / capacity).toFixed(2)), 'goodput as a share of the knee'),
    ...msColumns((step: CurveStep) => step.okLatency, ['p50Ms', 'p95Ms', 'p99Ms']),
    right('shed', (step) => formatPercent(step.shedRate), 'share of requests answered 503 with Retry-After'),
    right('tries', (step) => (step.attemptsPerArrival === null ? '—' : step.attemptsPerArrival.toFixed(2)), 'requests sent per arrival (retries included)'),
    right('gave up', (step) => formatPercent(step.failedArrivals), 'share of arrivals that never succeeded (patience ran out, timeout, error)'),
    right('healthz p99', (step) => formatMs(step.healthz?.p99Ms), '/healthz p99 during the step, ms'),
    right('cores', (step) => formatCores(step.serviceCpuCores), 'the service\'s mean CPU during the step'),
    right('lab cores', (step) => formatCores(step.labCpuCores), 'the lab process\'s CPU (load generator, probes) during the step'),
  ], flow.curve, (step) => step.multiple === 1)
}

/** The flow the plan is made from: logins of the first deployment measured (the service alone, or the target). */
function planningFlow (sizing: SizingResult): SizingFlow | undefined {
  return sizing.deployments.flatMap((deployment) => deployment.flows).find((flow) => flow.flow === 'login')
}

/** Replicas of each size for the peak; null without a peak, or without a measured knee and its CPU. */
export function replicaPlans (sizing: SizingResult): ReplicaPlan[] | null {
  const flow = planningFlow(sizing)
  if (sizing.peak === null || flow?.knee.kneePerSecond == null || flow.serviceCpuCoresAtKnee === null || flow.serviceCpuCoresAtKnee <= 0) return null
  const inputs = { capacityPerSecond: flow.knee.kneePerSecond, serviceCpuCores: flow.serviceCpuCoresAtKnee, peakPerSecond: sizing.peak.perSecond, headroom: sizing.headroom, spareReplicas: sizing.spareReplicas }
  return sizing.cpusPerReplica.map((cpus) => planReplicas(inputs, cpus))
}

export function replicaTable (plans: ReplicaPlan[]): Table {
  return table<ReplicaPlan>([
    right('CPUs per replica', (plan) => formatCount(plan.cpusPerReplica)),
    right('logins/s per replica', (plan) => formatRate(plan.replicaCapacityPerSecond), 'its knee, from the rate per vCPU measured'),
    right('replicas', (plan) => formatCount(plan.replicas), 'those the peak needs at the headroom, plus the spares'),
    right('CPUs in all', (plan) => formatCount(plan.replicas * plan.cpusPerReplica)),
    right('headroom at the peak', (plan) => formatPercent(plan.headroomAtPeak), 'the serving replicas\' capacity left unused at the peak (spares not counted)'),
  ], plans)
}

/** The replica plan's premise in one sentence. */
export function replicaPlanLine (sizing: SizingResult): string {
  const flow = planningFlow(sizing)
  if (sizing.peak === null) return 'No peak given (--peak 500/s --p99 1s): no replica plan.'
  if (flow === undefined || flow.knee.kneePerSecond === null) return 'No login knee was measured: no replica plan.'
  const perCpu = ratePerCpu(flow.knee.kneePerSecond, flow.serviceCpuCoresAtKnee)
  return `For a peak of ${formatRate(sizing.peak.perSecond)} logins/s at p99 ≤ ${formatMs(sizing.peak.p99Ms)} ms: ${formatRate(perCpu)} logins/s per vCPU ` +
    `(knee ${formatRate(flow.knee.kneePerSecond)}/s on ${formatCores(flow.serviceCpuCoresAtKnee)} cores used), each replica kept ${formatPercent(sizing.headroom)} below its knee at the peak, ` +
    `plus ${sizing.spareReplicas} spare replica${sizing.spareReplicas === 1 ? '' : 's'} for a restart or a loss. It assumes the rate grows with the CPUs, as hashing does, and a database that keeps up (below).`
}

/** PostgreSQL per request, per flow measured. */
export function databaseCostTable (sizing: SizingResult): Table {
  return table<{ deployment: SizingDeployment, flow: SizingFlow }>([
    left('measured', ({ deployment, flow }) => flowTitle(deployment, flow)),
    right('requests', ({ flow }) => formatCount(flow.database?.operations)),
    right('statements', ({ flow }) => (flow.database?.statements == null ? '—' : flow.database.statements.toFixed(2)), 'statements per successful request (pg_stat_statements, BEGIN and COMMIT included)'),
    right('WAL', ({ flow }) => bytes(flow.database?.walBytes ?? null), 'write-ahead log per successful request'),
    right('PostgreSQL CPU', ({ flow }) => (flow.database?.cpuSeconds == null ? '—' : `${(flow.database.cpuSeconds * 1e6).toFixed(0)} µs`), 'CPU of every PostgreSQL process per successful request'),
    left('note', ({ flow }) => flow.databaseNote ?? 'over the knee search\'s steps that held', 50),
  ], sizingFlowsOf(sizing))
}

/** At what peak a database of each size is the limit of logins, and what the peak asked for costs it. */
export function databaseLimitTable (sizing: SizingResult): Table | null {
  const cost = planningFlow(sizing)?.database
  if (cost == null) return null
  const limits = databaseLimits(cost, sizing.headroom, sizing.databaseCpus)
  if (limits === null) return null
  return table<DatabaseLimit>([
    right('database CPUs', (limit) => formatCount(limit.databaseCpus)),
    right('the limit, logins/s', (limit) => formatRate(limit.limitPerSecond), `the peak at which the database runs at ${formatPercent(1 - sizing.headroom)} of its CPUs: past it, more replicas add nothing`),
  ], limits)
}

/** What the peak asked for costs the database, and what to do when the database is the limit. */
export function databaseLines (sizing: SizingResult): string[] {
  const cost = planningFlow(sizing)?.database
  if (cost == null) return ['PostgreSQL\'s cost per login was not measured, so the database\'s limit is unknown.']
  const lines = [
    'The replicas share one PostgreSQL: every login costs it what the table above says however many replicas there are, so past the limit below more replicas add nothing. ' +
      'The CPU figures are of this machine\'s CPU model; a database on another scales by its own.',
  ]
  if (sizing.peak !== null) {
    const atPeak = databaseAtPeak(cost, sizing.peak.perSecond, sizing.headroom)
    lines.push(`At the peak of ${formatRate(sizing.peak.perSecond)} logins/s the database runs ${atPeak.statementsPerSecond === null ? 'an unmeasured number of' : formatCount(atPeak.statementsPerSecond)} statements/s, ` +
      `writes ${bytes(atPeak.walBytesPerSecond)}/s of WAL and spends ${atPeak.cpus === null ? 'an unmeasured share of its' : `${formatCores(atPeak.cpus)} cores of`} CPU` +
      `${atPeak.cpusNeeded === null ? '' : `: give it at least ${atPeak.cpusNeeded} CPUs to keep ${formatPercent(sizing.headroom)} headroom`}.`)
  }
  lines.push('When the database is the limit: give it more CPUs (the cost per login is CPU and WAL, not reads a replica could take); keep replicas × TOLLBOOTH_DB_POOL_SIZE under ' +
    'max_connections, or put PgBouncer in transaction mode between them (with TOLLBOOTH_DB_STATEMENTS=unnamed before PgBouncer 1.21); put the WAL on a fast disk; ' +
    'and shed at the door before the database slows (each replica\'s admission control does, as the curve shows).')
  return lines
}
