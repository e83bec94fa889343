/**
 * The one JSON result of a lab command (`result.json`) and the only input of every report.
 * Field by field, with units: docs/reference/lab-result.md.
 */

export const labResultSchema = 'tollbooth-lab-result/1'

export type LabCommand = 'run' | 'knee' | 'compare'

export interface LabResult {
  schema: typeof labResultSchema
  command: LabCommand
  createdAt: string
  commandLine: string
  machine: MachineInfo
  scenario: ScenarioInfo
  load: LoadSpec
  /** `run` and `knee`: one; `compare`: one per strategy, in the order they ran. */
  runs: RunResult[]
  knee?: KneeResult
  references: ReferenceFigures[]
  warnings: string[]
}

export interface MachineInfo {
  cpuModel: string
  cores: number
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
  endpoints: string[]
  phases?: string[]
}

export interface Stage {
  durationMs: number
  /** Virtual users (closed) or arrivals per second (open) at the end of the stage. */
  target: number
}

interface LoadSpecBase {
  requestTimeoutMs: number
  healthzProbeRate: number
  workers: number
  honourRetryAfter: boolean
  politeAndNaive?: boolean
  accounts: number
}

export interface ClosedLoadSpec extends LoadSpecBase {
  model: 'closed'
  startVus: number
  stages: Stage[]
  thinkTimeMs: number
}

export interface OpenLoadSpec extends LoadSpecBase {
  model: 'open'
  startRate: number
  stages: Stage[]
  maxInFlight: number
}

export type LoadSpec = ClosedLoadSpec | OpenLoadSpec

export interface LatencySummary {
  count: number
  meanMs: number | null
  p50Ms: number | null
  p90Ms: number | null
  p95Ms: number | null
  p99Ms: number | null
  maxMs: number | null
}

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

export interface RunSummary {
  durationSeconds: number
  achievedPerSecond: number
  requestsPerSecond: number
  requests: number
  ok: number
  latency: LatencySummary
  okLatency: LatencySummary
  errors: ErrorCounts
  errorRate: number
  healthz: LatencySummary | null
  eventLoopDelayP99MaxMs: number | null
  libuvCanaryMaxMs: number | null
  cpuCoresMean: number | null
  peakRssBytes: number | null
}

export interface RunResult {
  label: string
  clients?: 'polite' | 'naive'
  service: ServiceInfo
  startedAt: string
  durationMs: number
  seconds: SecondSample[]
  server: ServerSample[]
  endpoints: Record<string, EndpointStats>
  all: EndpointStats
  healthz: LatencySummary | null
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

export interface KneeCriteria {
  startRate: number
  stepFactor: number
  stepDurationMs: number
  throughputMargin: number
  p99LimitMs: number
  errorRateLimit: number
  maxSteps: number
}

export interface KneeResult {
  criteria: KneeCriteria
  steps: KneeStep[]
  kneePerSecond: number | null
  stoppedBecause: string
}

export interface ReferenceFigures {
  source: string
  strategy: string
  setup: string
  requestsPerSecond?: number
  meanMs?: number
  p50Ms?: number
  p95Ms?: number
  p99Ms?: number
  errorRate?: number
  kneePerSecond?: number
  note?: string
}
