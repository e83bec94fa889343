/**
 * The one JSON result of a lab command (`result.json`) and the only input of every report.
 * Field by field, with units: docs/reference/lab-result.md.
 */

export const labResultSchema = 'tollbooth-lab-result/1'

export type LabCommand = 'run' | 'knee' | 'compare' | 'sizing'

export interface LabResult {
  schema: typeof labResultSchema
  command: LabCommand
  createdAt: string
  commandLine: string
  machine: MachineInfo
  /** The (first) scenario. */
  scenario: ScenarioInfo
  /** A compare of several scenarios: each of them, in the order they ran; each run says its own (`RunResult.scenario`). */
  scenarios?: ScenarioInfo[]
  /** The (first scenario's) load. */
  load: LoadSpec
  /** `run` and `knee`: one; `compare`: one per strategy (and scenario), in the order they ran. */
  runs: RunResult[]
  knee?: KneeResult
  /** `sizing`: the knees, the overload curves and what the database spent, per deployment and flow. */
  sizing?: SizingResult
  references: ReferenceFigures[]
  warnings: string[]
}

export interface MachineInfo {
  cpuModel: string
  cores: number
  cpuBudget: { cpus: number, quota: number | null, source: string }
  /** Scheduler autogroups (nice values count only inside a session); null: the kernel does not say. Absent in older results. */
  schedulerAutogroups?: boolean | null
  memoryBytes: number
  node: string
  platform: string
  arch: string
  tollboothVersion: string
}

export interface ScenarioInfo {
  name: string
  description: string
  endpoints: string[]
  phases?: string[]
}

export interface Stage {
  durationMs: number
  /** Virtual users (closed) or arrivals per second (open) at the end of the stage. */
  target: number
}

/** What the generators run: the whole load, a phase, or a knee step. */
export type SegmentLoad =
  | { model: 'closed', startVus: number, stages: Stage[], thinkTimeMs: number, honourRetryAfter: boolean }
  | { model: 'open', startRate: number, stages: Stage[], maxInFlight: number, retry?: ArrivalRetry }

/**
 * Open model: what an arrival does with a 503 (`lab sizing`'s clients). `naive` sends the request
 * again at once, `polite` after the answer's Retry-After (1 s without one); either gives up once
 * `patienceMs` have passed since the arrival. Every attempt is counted as a request, timed from
 * the arrival. Unset: one attempt, a 503 is the arrival's answer.
 */
export interface ArrivalRetry { clients: 'naive' | 'polite', patienceMs: number }

export type LoadSpec = SegmentLoad & {
  requestTimeoutMs: number
  healthzProbeRate: number
  /** When the probes went: at random times (a Poisson process at `healthzProbeRate`); absent in results from before, whose probes went on a steady tick from the run's start. */
  healthzProbeTimes?: 'random'
  workers: number
  /** The generator's HTTP client (`--http-client`, http/types.ts): the lab's own or undici; absent in results from before the lab had its own, which used undici. */
  httpClient?: 'raw' | 'undici'
  honourRetryAfter: boolean
  politeAndNaive?: boolean
  accounts: number
  /** Closed model: the users' connections came from this many loopback addresses (`--source-addresses`); absent: one. */
  sourceAddresses?: number
  /** mixed-storm: the share of users who signed in with a passkey (`--passkey-share`), 0 to 1; absent for the other scenarios. */
  passkeyShare?: number
}

/** The percentiles of every LatencySummary, in the order of the CSV columns. */
export const percentileFields = ['meanMs', 'p50Ms', 'p90Ms', 'p95Ms', 'p99Ms', 'maxMs'] as const

export type LatencySummary = { count: number } & Record<(typeof percentileFields)[number], number | null>

export interface ErrorCounts {
  byStatus: Record<string, number>
  overloaded: number
  timeouts: number
  connectionErrors: number
  other: number
}

export interface EndpointStats {
  requests: number
  ok: number
  latency: LatencySummary
  okLatency: LatencySummary
  /** The 503s with Retry-After alone (absent in results from before it was measured). */
  refusedLatency?: LatencySummary
  errors: ErrorCounts
}

/** One second of the run, `t - 1` to `t` seconds after the load started. */
export interface SecondSample {
  t: number
  phase?: string
  offered: number
  started: number
  achieved: number
  dropped: number
  inFlight: number
  vus: number | null
  all: EndpointStats
  byEndpoint: Record<string, EndpointStats>
  healthz: LatencySummary | null
  /** Probes of an empty server beside the service in the same second (absent in results from before it was measured). */
  healthzFloor?: LatencySummary | null
  /**
   * The busiest load-generator thread's event-loop utilisation in this second, 0 to 1 (absent in
   * results from before it was kept): tells a second the generator fell behind in from one the
   * service was slow in. A thread waiting for a core while it has work is not counted as busy.
   */
  generatorUtilisation?: number
}

/** What the service said about itself in one second, in the order of server.csv; null where unmeasured. */
export const serverSignalNames = [
  'cpuCores', 'processTreeCpuCores', 'rssBytes', 'processTreeRssBytes', 'eventLoopDelayP99Ms', 'eventLoopDelayMaxMs', 'libuvCanaryMs',
  'hashQueued', 'hashRunning', 'hashWaitMeanMs', 'hashRejected', 'hashDeadlineExceeded', 'hashCancelled',
] as const

export type ServerSample = { t: number } & Record<(typeof serverSignalNames)[number], number | null>

export interface GeneratorInfo {
  workers: number
  cpuCores: number
  maxEventLoopUtilisation: number
  sendLagMs: LatencySummary | null
  saturated: boolean
}

export interface ServiceInfo {
  url: string
  startedByLab: boolean
  strategy: string | null
  version: string | null
  settings: Record<string, string>
}

export interface RunSummary extends EndpointStats {
  durationSeconds: number
  /** Successful iterations that ended within the schedule, per second of it (before 2026-11-26: those of the drain after it too). */
  achievedPerSecond: number
  /** Successful iterations that ended in the drain after the schedule, not in `achievedPerSecond` (absent in older results). */
  achievedAfterEnd?: number
  requestsPerSecond: number
  errorRate: number
  healthz: LatencySummary | null
  /** The same probes of an empty server on the lab's machine during the run: the floor under `healthz`. */
  healthzFloor?: LatencySummary | null
  eventLoopDelayP99MaxMs: number | null
  libuvCanaryMaxMs: number | null
  cpuCoresMean: number | null
  peakRssBytes: number | null
}

/**
 * The service's CPU per successful iteration (a login, in the login and passkey storms), in
 * milliseconds: its mean cores over the achieved rate. Derived, not stored; null where the CPU was
 * not measured or nothing succeeded.
 */
export function serviceCpuMsPerAchieved (summary: Pick<RunSummary, 'cpuCoresMean' | 'achievedPerSecond'>): number | null {
  if (summary.cpuCoresMean === null || summary.achievedPerSecond <= 0) return null
  return (summary.cpuCoresMean / summary.achievedPerSecond) * 1000
}

export interface RunResult {
  label: string
  clients?: 'polite' | 'naive'
  /** A compare of several scenarios: the run's scenario and its load. */
  scenario?: string
  load?: LoadSpec
  service: ServiceInfo
  startedAt: string
  durationMs: number
  seconds: SecondSample[]
  server: ServerSample[]
  endpoints: Record<string, EndpointStats>
  all: EndpointStats
  healthz: LatencySummary | null
  healthzFloor?: LatencySummary | null
  phases?: Record<string, EndpointStats>
  generator: GeneratorInfo
  summary: RunSummary
}

export interface KneeStep {
  /** 0 for the first step (reports number them from 1). */
  index: number
  offeredPerSecond: number
  achievedPerSecond: number
  latency: LatencySummary
  errorRate: number
  dropped: number
  startT: number
  endT: number
  held: boolean
  failedBecause: string[]
}

export type KneeCriteria = Record<'startRate' | 'stepFactor' | 'stepDurationMs' | 'throughputMargin' | 'p99LimitMs' | 'errorRateLimit' | 'maxSteps', number>

export interface KneeResult {
  criteria: KneeCriteria
  steps: KneeStep[]
  kneePerSecond: number | null
  stoppedBecause: string
}

export interface ReferenceFigures extends Partial<Record<'requestsPerSecond' | 'meanMs' | 'p50Ms' | 'p95Ms' | 'p99Ms' | 'errorRate' | 'kneePerSecond', number>> {
  source: string
  strategy: string
  setup: string
  note?: string
}

/** `lab sizing`: what it asked for and what it measured; the sizing table is derived from it (sizing/plan.ts). */
export interface SizingResult {
  /** The hash as the services ran it: algorithm and parameters (unset ones: the service's defaults). */
  hashParameters: string
  /** Where TLS ends during the measurement. */
  tls: string
  /** Where the load generator ran. */
  generatorPlace: string
  /** The peak to size for and the p99 it must keep (`--peak`, `--p99`); null: no peak given. */
  peak: { perSecond: number, p99Ms: number } | null
  headroom: number
  spareReplicas: number
  /** The replica sizes the table plans for, in CPUs. */
  cpusPerReplica: number[]
  /** The database sizes the table gives the limit of, in CPUs. */
  databaseCpus: number[]
  /** Offered load of each curve step, as multiples of the flow's knee. */
  multiples: number[]
  stepDurationMs: number
  /** An arrival of a curve step gives up this long after it came (ArrivalRetry). */
  patienceMs: number
  deployments: SizingDeployment[]
}

export interface SizingDeployment {
  /** `alone` (one service), `haproxy` (one service behind HAProxy, as the launcher runs it), `target` (a service the lab did not start). */
  kind: 'alone' | 'haproxy' | 'target'
  description: string
  flows: SizingFlow[]
}

export interface SizingFlow {
  flow: 'login' | 'me'
  /** The endpoint measured ("POST /auth/login", "GET /me"). */
  endpoint: string
  /** Its run in `runs` (the seconds, the server's signals). */
  run: number
  /** A short closed-loop storm before the knee search (the search starts below it). */
  estimate: { vus: number, durationMs: number, achievedPerSecond: number }
  knee: KneeResult
  /** The service's mean CPU (cores) during the knee's step; null where not scraped. */
  serviceCpuCoresAtKnee: number | null
  curve: CurveStep[]
  /** What PostgreSQL spent per successful request over the knee search's steps that held; null: not measured (say why in `databaseNote`). */
  database: (DatabaseCost & { operations: number, seconds: number }) | null
  databaseNote?: string
}

export interface DatabaseCost {
  statements: number | null
  walBytes: number
  cpuSeconds: number | null
}

/** One constant-rate step of the overload curve. */
export interface CurveStep {
  multiple: number
  clients: 'naive' | 'polite'
  offeredPerSecond: number
  /** Arrivals that succeeded within the step, per second of it. */
  goodputPerSecond: number
  /** Latency of the successful arrivals, from the arrival (retries included). */
  okLatency: LatencySummary
  /** Requests sent (every attempt) per arrival started. */
  attemptsPerArrival: number | null
  /** Share of the requests answered 503 with Retry-After. */
  shedRate: number
  /** Share of the arrivals that did not succeed (gave up, timed out, failed). */
  failedArrivals: number
  timeouts: number
  dropped: number
  healthz: LatencySummary | null
  serviceCpuCores: number | null
  labCpuCores: number
  startT: number
  endT: number
}
