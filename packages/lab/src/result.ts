/**
 * The one JSON result of a lab command: `result.json`, and the only input of
 * every report (terminal table, CSV, HTML). Collect, then render: nothing here
 * is computed at render time that a reader of the JSON could not see.
 *
 * Units are in the names: `Ms` milliseconds, `Bytes`, `PerSecond`; `t` is
 * seconds since the start of the run. A value the lab could not measure is
 * `null`, never 0.
 */

export const labResultSchema = 'tollbooth-lab-result/1'

export type LabCommand = 'run' | 'knee' | 'compare'

export interface LabResult {
  schema: typeof labResultSchema
  command: LabCommand
  /** ISO 8601. */
  createdAt: string
  /** The command line that produced this result, to reproduce it. */
  commandLine: string
  machine: MachineInfo
  scenario: ScenarioInfo
  load: LoadSpec
  /** `run` and `knee`: one; `compare`: one per strategy, in the order they ran. */
  runs: RunResult[]
  /** `knee` only. */
  knee?: KneeResult
  /** The seed articles' own figures where this scenario reproduces one of their experiments. */
  references: ReferenceFigures[]
  /** Anything that makes the figures less trustworthy (a saturated load generator, a failed scrape ...). */
  warnings: string[]
}

export interface MachineInfo {
  cpuModel: string
  cores: number
  /** The CPU this machine gives the lab's processes (cgroup quota, affinity, cores). */
  cpuBudget: { cpus: number, quota: number | null, source: string }
  memoryBytes: number
  node: string
  platform: string
  arch: string
  tollboothVersion: string
}

export interface ScenarioInfo {
  name: string
  description: string
  /** Endpoint names in the order the scenario uses them (tables and charts keep this order). */
  endpoints: string[]
  /** Sequential phases (auth-path): each runs the whole load spec in turn. Absent: one phase. */
  phases?: string[]
}

export interface Stage {
  durationMs: number
  /** Virtual users (closed model) or arrivals per second (open model) reached at the end of the stage. */
  target: number
}

interface LoadSpecBase {
  /** Per request. A request past it is aborted and counted as a timeout. */
  requestTimeoutMs: number
  /** /healthz probes per second during the load, from a connection of their own (0: none). */
  healthzProbeRate: number
  /** Load-generator worker threads. */
  workers: number
  /** Whether a virtual user waits for a 503's Retry-After before its next iteration. */
  honourRetryAfter: boolean
  /** compare with both kinds of clients: each strategy ran once with polite VUs (Retry-After honoured), once with naive ones. */
  politeAndNaive?: boolean
  /** Accounts pre-registered during setup (not counted). */
  accounts: number
}

/** Virtual users that each loop over the scenario (what k6 users know). */
export interface ClosedLoadSpec extends LoadSpecBase {
  model: 'closed'
  /** Virtual users at the start (k6's startVUs): `--vus N` starts with N and holds them. */
  startVus: number
  /** Ramps from `startVus`, linearly within each stage (k6's ramping-vus). */
  stages: Stage[]
  thinkTimeMs: number
}

/** Arrivals at a target rate, whatever the service answers (no coordinated omission). */
export interface OpenLoadSpec extends LoadSpecBase {
  model: 'open'
  /**
   * The first stage ramps from `startRate`; later ones from the previous target (k6's
   * ramping-arrival-rate). A knee result has one stage from its first step's rate to its last
   * step's, taken in constant steps (`knee.steps` has each).
   */
  startRate: number
  stages: Stage[]
  /** Iterations allowed in flight at once; an arrival beyond it is not sent and is counted as dropped. */
  maxInFlight: number
}

export type LoadSpec = ClosedLoadSpec | OpenLoadSpec

/** Latency figures in milliseconds; `count` is how many samples made them. */
export interface LatencySummary {
  count: number
  meanMs: number | null
  p50Ms: number | null
  p90Ms: number | null
  p95Ms: number | null
  p99Ms: number | null
  maxMs: number | null
}

/** Why requests did not get a 2xx. */
export interface ErrorCounts {
  /** Responses that were not 2xx, by status code ("401", "503" ...). */
  byStatus: Record<string, number>
  /** 503s that carried a Retry-After header: refused at once, by design. */
  overloaded: number
  /** No response within `requestTimeoutMs`. */
  timeouts: number
  /** The connection was refused, reset or closed before a response. */
  connectionErrors: number
  /** Anything else (a body that is not the expected JSON ...). */
  other: number
}

export interface EndpointStats {
  /** Responses (any status) and transport failures: every request that ended. */
  requests: number
  ok: number
  /**
   * Latency of every request that got a response (2xx or not) or timed out (at the time it gave up),
   * from its intended send time in the open model; connection errors have none.
   */
  latency: LatencySummary
  /** Latency of the 2xx responses alone: what a user who got in waited (refusals are fast by design). */
  okLatency: LatencySummary
  errors: ErrorCounts
}

/** One second of the run, `t - 1` to `t` seconds after the load started. */
export interface SecondSample {
  t: number
  /** The phase this second belongs to (auth-path), else absent. */
  phase?: string
  /** Iterations the schedule asked for in this second: arrivals (open) or started by VUs (closed). */
  offered: number
  /** Iterations actually started. */
  started: number
  /** Iterations that ended with every request 2xx. */
  achieved: number
  /** Open model: arrivals that could not be sent (max in flight reached). */
  dropped: number
  /** Requests in flight at the end of the second. */
  inFlight: number
  /** Closed model: active virtual users at the end of the second. */
  vus: number | null
  /** Every request of the second, all endpoints together. */
  all: EndpointStats
  byEndpoint: Record<string, EndpointStats>
  /** /healthz probes that ended in this second. */
  healthz: LatencySummary | null
}

/** What /metrics (and, when the lab started the service, /proc) said about the service, one sample a second. */
export interface ServerSample {
  t: number
  /** CPU of the service process as it reports itself (process_cpu_seconds_total), in cores. */
  cpuCores: number | null
  /** CPU of the service's whole process tree (children, cluster workers; not PostgreSQL), in cores: lab-started only. */
  processTreeCpuCores: number | null
  rssBytes: number | null
  processTreeRssBytes: number | null
  eventLoopDelayP99Ms: number | null
  eventLoopDelayMaxMs: number | null
  /** The latency of a tiny libuv-pool-bound operation (the pool-starvation article's canary). */
  libuvCanaryMs: number | null
  hashQueued: number | null
  hashRunning: number | null
  /** Mean queue wait of the hashes that started in this second. */
  hashWaitMeanMs: number | null
  /** Hash requests refused at admission, expired in the queue, or cancelled in this second. */
  hashRejected: number | null
  hashDeadlineExceeded: number | null
  hashCancelled: number | null
}

export interface GeneratorInfo {
  workers: number
  /** CPU the lab's own process used during the load, in cores (all its threads). */
  cpuCores: number
  /** Highest event-loop utilisation of any load-generator thread (0..1). */
  maxEventLoopUtilisation: number
  /** Open model: how late arrivals were sent after their intended time. */
  sendLagMs: LatencySummary | null
  /** True when the generator, not the service, may have limited the load. */
  saturated: boolean
}

export interface ServiceInfo {
  url: string
  /** True when the lab started (and stopped) this service itself. */
  startedByLab: boolean
  /** Hash execution strategy, as configured or as /metrics reports it. */
  strategy: string | null
  version: string | null
  /** Settings the service ran with (from the lab's own launch, or from /metrics); never secrets. */
  settings: Record<string, string>
}

/** The figures the comparison table shows for one run; derived from the rest of the run. */
export interface RunSummary {
  durationSeconds: number
  /** Successful iterations per second. */
  achievedPerSecond: number
  /** Requests per second (any outcome). */
  requestsPerSecond: number
  requests: number
  ok: number
  /** Every request, all endpoints. */
  latency: LatencySummary
  /** The 2xx responses alone, all endpoints. */
  okLatency: LatencySummary
  errors: ErrorCounts
  /** Share of requests that did not get a 2xx (0..1). */
  errorRate: number
  healthz: LatencySummary | null
  eventLoopDelayP99MaxMs: number | null
  libuvCanaryMaxMs: number | null
  /** Mean CPU during the load: the process tree when the lab started the service, else the process. */
  cpuCoresMean: number | null
  peakRssBytes: number | null
}

export interface RunResult {
  /** The strategy's name in a comparison ("tollbooth naive" when compared with both kinds of clients), else "run" or the knee's label. */
  label: string
  /** compare --clients: whether this run's VUs waited out Retry-After (polite) or retried at once (naive). */
  clients?: 'polite' | 'naive'
  service: ServiceInfo
  /** ISO 8601. */
  startedAt: string
  durationMs: number
  seconds: SecondSample[]
  server: ServerSample[]
  /** Whole-run figures by endpoint name (the scenario's names, e.g. "POST /auth/login"). */
  endpoints: Record<string, EndpointStats>
  /** Every request, all endpoints, whole run. */
  all: EndpointStats
  /** Whole-run /healthz probes. */
  healthz: LatencySummary | null
  /** Per phase (auth-path), whole-phase figures of every request. */
  phases?: Record<string, EndpointStats>
  generator: GeneratorInfo
  summary: RunSummary
}

/** One constant-rate step of a knee search. */
export interface KneeStep {
  /** 0 for the first step (reports number them from 1). */
  index: number
  offeredPerSecond: number
  /** Successful iterations per second during the step. */
  achievedPerSecond: number
  latency: LatencySummary
  errorRate: number
  dropped: number
  /** Seconds of the run (`t`) the step covered: (startT, endT]. */
  startT: number
  endT: number
  /** Whether the step met every criterion. */
  held: boolean
  /** Why it did not hold. */
  failedBecause: string[]
}

export interface KneeCriteria {
  startRate: number
  /** Growth from one step to the next, e.g. 0.1 for 10 %. */
  stepFactor: number
  stepDurationMs: number
  /** A step fails when achieved < offered × (1 − margin). */
  throughputMargin: number
  /** A step fails when its p99 passes this. */
  p99LimitMs: number
  /** A step fails when its error rate passes this (0..1). */
  errorRateLimit: number
  maxSteps: number
}

export interface KneeResult {
  criteria: KneeCriteria
  steps: KneeStep[]
  /** The last offered rate that held; null when even the first step failed. */
  kneePerSecond: number | null
  /** Why the search stopped. */
  stoppedBecause: string
}

/** What a seed article reported for the experiment this scenario reproduces: their figures, not ours. */
export interface ReferenceFigures {
  /** The article's title (the project keeps its text with the seeds it started from). */
  source: string
  /** Which of our strategies reproduces the setup they measured. */
  strategy: string
  /** Their setup, in a few words (machine, load, hash). */
  setup: string
  requestsPerSecond?: number
  meanMs?: number
  p50Ms?: number
  p95Ms?: number
  p99Ms?: number
  errorRate?: number
  /** Knee searches: the last rate that held in their ramp. */
  kneePerSecond?: number
  note?: string
}
