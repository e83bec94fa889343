/**
 * Synthetic LabResults for the report tests: generated, deterministic (a seeded random
 * sequence), shaped like what the seed articles describe, and typed against src/result.ts
 * so that a change of the contract breaks them at compile time.
 */
import {
  labResultSchema, type EndpointStats, type ErrorCounts, type KneeStep, type LabResult, type LatencySummary, type LoadSpec,
  type MachineInfo, type ReferenceFigures, type RunResult, type ScenarioInfo, type SecondSample, type ServerSample,
} from '../src/result.js'
// The prober's seeded generator (mulberry32), so every fixture is the same on every run.
import { seededRandom as seeded } from '../src/load/probe.js'

const mebibyte = 1048576

function hundredths (value: number): number {
  return Math.round(value * 100) / 100
}

/** value × (1 ± spread), rounded to 0.01. */
function jitter (random: () => number, value: number, spread = 0.1): number {
  return hundredths(value * (1 + (random() * 2 - 1) * spread))
}

/** A result's run by index; a test that asks for a run the fixture lacks is wrong, so throw. */
export function runAt (result: LabResult, index: number): RunResult {
  const run = result.runs[index]
  if (run === undefined) throw new Error(`the fixture has no run ${index}`)
  return run
}

function machine (): MachineInfo {
  return {
    cpuModel: 'AMD EPYC 7B13',
    cores: 2,
    cpuBudget: { cpus: 2, quota: null, source: 'cores' },
    memoryBytes: 24 * 1024 * mebibyte,
    node: 'v20.20.2',
    platform: 'linux',
    arch: 'x64',
    tollboothVersion: '0.1.0',
  }
}

function latency (count: number, p50Ms: number, p95Ms: number, p99Ms: number): LatencySummary {
  if (count === 0) return { count: 0, meanMs: null, p50Ms: null, p90Ms: null, p95Ms: null, p99Ms: null, maxMs: null }
  return {
    count,
    meanMs: hundredths(p50Ms * 0.8 + p95Ms * 0.2),
    p50Ms: hundredths(p50Ms),
    p90Ms: hundredths(p50Ms + (p95Ms - p50Ms) * 0.7),
    p95Ms: hundredths(p95Ms),
    p99Ms: hundredths(p99Ms),
    maxMs: hundredths(p99Ms * 1.25),
  }
}

function errors (byStatus: Record<string, number>, partial: Partial<ErrorCounts> = {}): ErrorCounts {
  return { byStatus, overloaded: 0, timeouts: 0, connectionErrors: 0, other: 0, ...partial }
}

/** How one strategy behaves under the load: whole-run figures the seconds scatter around. */
interface Profile {
  label: string
  strategy: string
  achievedPerSecond: number
  p50Ms: number
  p95Ms: number
  p99Ms: number
  /** Shares of requests (0..1). */
  timeoutShare: number
  overloadedShare: number
  healthzP99Ms: number | null
  eventLoopP99Ms: number | null
  libuvCanaryMs: number | null
  cpuCores: number
  rssMiB: number
  /** Child processes or cluster workers: the lab measured the process tree. */
  processTree: boolean
  hashQueue: boolean
}

interface RunShape {
  endpoints: string[]
  seconds: number
  /** Seconds the closed model takes to reach its virtual users (0: open model). */
  rampSeconds: number
  virtualUsers: number | null
  /** Open model: offered arrivals of second t; closed: null (offered = started). */
  offeredAt: ((t: number) => number) | null
  /** Latency multiplier at second t (a knee search's rising latency). */
  latencyAt?: (t: number) => number
  /** Achieved ceiling at second t. */
  achievedAt?: (t: number) => number
}

function sumStats (stats: EndpointStats[]): EndpointStats {
  const requests = stats.reduce((sum, one) => sum + one.requests, 0)
  const byStatus: Record<string, number> = {}
  for (const one of stats) for (const [status, count] of Object.entries(one.errors.byStatus)) byStatus[status] = (byStatus[status] ?? 0) + count
  const worstOf = (of: (one: EndpointStats) => LatencySummary): LatencySummary => {
    const worst = (pick: (one: LatencySummary) => number | null): number | null => {
      const values = stats.map((one) => pick(of(one))).filter((value): value is number => value !== null)
      return values.length === 0 ? null : Math.max(...values)
    }
    return {
      count: stats.reduce((sum, one) => sum + of(one).count, 0),
      meanMs: worst((one) => one.meanMs),
      p50Ms: worst((one) => one.p50Ms),
      p90Ms: worst((one) => one.p90Ms),
      p95Ms: worst((one) => one.p95Ms),
      p99Ms: worst((one) => one.p99Ms),
      maxMs: worst((one) => one.maxMs),
    }
  }
  return {
    requests,
    ok: stats.reduce((sum, one) => sum + one.ok, 0),
    latency: worstOf((one) => one.latency),
    okLatency: worstOf((one) => one.okLatency),
    refusedLatency: worstOf((one) => one.refusedLatency ?? one.latency),
    errors: errors(byStatus, {
      overloaded: stats.reduce((sum, one) => sum + one.errors.overloaded, 0),
      timeouts: stats.reduce((sum, one) => sum + one.errors.timeouts, 0),
      connectionErrors: stats.reduce((sum, one) => sum + one.errors.connectionErrors, 0),
      other: stats.reduce((sum, one) => sum + one.errors.other, 0),
    }),
  }
}

/** The per-endpoint stats of a second (or a run) with `requests` spread over the endpoints. */
function statsFor (profile: Profile, endpoints: string[], requests: number, scale: number, random: () => number): Record<string, EndpointStats> {
  const perEndpoint = Math.round(requests / endpoints.length)
  return Object.fromEntries(endpoints.map((endpoint, index) => {
    // Later endpoints of a flow (a post after the login) are cheap: no hash.
    const cost = index === 0 || endpoint.includes('/auth/') ? 1 : 0.05
    const overloaded = Math.round(perEndpoint * profile.overloadedShare * cost)
    const timeouts = Math.round(perEndpoint * profile.timeoutShare * cost)
    // One factor for all percentiles of a sample, so they stay in order.
    const factor = jitter(random, scale * cost)
    const figures = latency(perEndpoint - timeouts, profile.p50Ms * factor, profile.p95Ms * factor, profile.p99Ms * factor)
    const failed = overloaded + timeouts
    return [endpoint, {
      requests: perEndpoint,
      ok: perEndpoint - failed,
      latency: figures,
      // Refusals are fast, so the 2xx alone are a little slower than everything together.
      okLatency: latency(perEndpoint - failed, profile.p50Ms * factor * 1.1, profile.p95Ms * factor * 1.1, profile.p99Ms * factor * 1.1),
      refusedLatency: latency(overloaded, 0.8 * factor, 2 * factor, 4 * factor),
      errors: errors(overloaded === 0 ? {} : { 503: overloaded }, { overloaded, timeouts }),
    }]
  }))
}

function serverSample (profile: Profile, t: number, load: number, random: () => number): ServerSample {
  const cpu = jitter(random, profile.cpuCores * load, 0.05)
  const rss = Math.round(jitter(random, profile.rssMiB * (0.6 + 0.4 * load), 0.03) * mebibyte)
  // A failed scrape: one second where the service said nothing about its loop.
  const scraped = t !== 7
  const queued = profile.hashQueue ? Math.round(jitter(random, 40 * load, 0.3)) : null
  return {
    t,
    // With children or workers doing the hashing, the service process itself is mostly idle.
    cpuCores: profile.processTree ? jitter(random, 0.3 * load) : cpu,
    processTreeCpuCores: profile.processTree ? cpu : null,
    rssBytes: profile.processTree ? Math.round(rss / 4) : rss,
    processTreeRssBytes: profile.processTree ? rss : null,
    eventLoopDelayP99Ms: scraped && profile.eventLoopP99Ms !== null ? jitter(random, profile.eventLoopP99Ms * load) : null,
    eventLoopDelayMaxMs: scraped && profile.eventLoopP99Ms !== null ? jitter(random, profile.eventLoopP99Ms * load * 1.6) : null,
    libuvCanaryMs: scraped && profile.libuvCanaryMs !== null ? jitter(random, Math.max(0.4, profile.libuvCanaryMs * load)) : null,
    hashQueued: queued,
    hashRunning: profile.hashQueue ? 2 : null,
    hashWaitMeanMs: profile.hashQueue ? jitter(random, profile.p50Ms * 0.6 * load) : null,
    hashRejected: profile.hashQueue ? Math.round(profile.overloadedShare * profile.achievedPerSecond * 2 * load) : null,
    hashDeadlineExceeded: profile.hashQueue ? 0 : null,
    hashCancelled: profile.hashQueue ? (t % 10 === 0 ? 1 : 0) : null,
  }
}

/** The empty reference server's /healthz p99 beside every synthetic service. */
const floorP99Ms = 3.5

function healthzSecond (p99Ms: number): LatencySummary {
  return latency(5, p99Ms * 0.3, p99Ms * 0.8, p99Ms)
}

function syntheticRun (profile: Profile, shape: RunShape, seed: number): RunResult {
  const random = seeded(seed)
  const seconds: SecondSample[] = []
  const server: ServerSample[] = []
  const requestsPerIteration = shape.endpoints.length
  for (let t = 1; t <= shape.seconds; t++) {
    const load = shape.rampSeconds === 0 ? 1 : Math.min(1, t / shape.rampSeconds)
    const ceiling = shape.achievedAt?.(t) ?? profile.achievedPerSecond
    const offered = shape.offeredAt === null ? Math.round(jitter(random, ceiling * load * 1.02, 0.05)) : Math.round(shape.offeredAt(t))
    // Refusing the excess (503) costs no capacity: what is admitted still completes.
    const achieved = Math.min(offered, Math.round(jitter(random, ceiling * load * (1 - profile.timeoutShare), 0.06)))
    const dropped = shape.offeredAt === null ? 0 : Math.max(0, offered - Math.round(ceiling * 1.04))
    const requests = (offered - dropped) * requestsPerIteration
    const scale = (0.4 + 0.6 * load) * (shape.latencyAt?.(t) ?? 1)
    const byEndpoint = statsFor(profile, shape.endpoints, requests, scale, random)
    seconds.push({
      t,
      offered,
      started: offered - dropped,
      achieved,
      dropped,
      inFlight: Math.round(jitter(random, (shape.virtualUsers ?? ceiling) * load * 0.9)),
      vus: shape.virtualUsers === null ? null : Math.round(shape.virtualUsers * load),
      all: sumStats(Object.values(byEndpoint)),
      byEndpoint,
      // The first second ends before any /healthz probe does.
      healthz: t === 1 || profile.healthzP99Ms === null ? null : healthzSecond(profile.healthzP99Ms * jitter(random, load)),
      healthzFloor: t === 1 || profile.healthzP99Ms === null ? null : healthzSecond(floorP99Ms),
      generatorUtilisation: Math.round(load * 500) / 1000,
    })
    server.push(serverSample(profile, t, load, random))
  }
  const durationSeconds = shape.seconds
  const endpoints = statsFor(profile, shape.endpoints, seconds.reduce((sum, sample) => sum + sample.all.requests, 0), 1, seeded(seed + 1))
  const all = sumStats(Object.values(endpoints))
  const healthz = profile.healthzP99Ms === null ? null : latency(5 * (durationSeconds - 1), profile.healthzP99Ms * 0.3, profile.healthzP99Ms * 0.8, profile.healthzP99Ms)
  const healthzFloor = healthz === null ? null : latency(healthz.count, floorP99Ms * 0.3, floorP99Ms * 0.8, floorP99Ms)
  const peak = (pick: (sample: ServerSample) => number | null): number | null => {
    const values = server.map(pick).filter((value): value is number => value !== null)
    return values.length === 0 ? null : Math.max(...values)
  }
  const cpu = server.map((sample) => sample.processTreeCpuCores ?? sample.cpuCores).filter((value): value is number => value !== null)
  return {
    label: profile.label,
    service: {
      url: 'http://127.0.0.1:38417',
      startedByLab: true,
      strategy: profile.strategy,
      version: '0.1.0',
      settings: { HASH_STRATEGY: profile.strategy, HASH_ALGORITHM: 'bcrypt', BCRYPT_COST: '10', ...(profile.strategy === 'libuv-128' ? { UV_THREADPOOL_SIZE: '128' } : {}) },
    },
    startedAt: '2026-03-20T10:00:00.000Z',
    durationMs: durationSeconds * 1000,
    seconds,
    server,
    endpoints,
    all,
    healthz,
    healthzFloor,
    generator: { workers: 2, cpuCores: 0.31, maxEventLoopUtilisation: 0.42, sendLagMs: shape.offeredAt === null ? null : latency(1000, 0.2, 0.9, 1.8), saturated: false },
    summary: {
      durationSeconds,
      achievedPerSecond: seconds.reduce((sum, sample) => sum + sample.achieved, 0) / durationSeconds,
      // About a second's worth in flight when the schedule ends.
      achievedAfterEnd: Math.round(profile.achievedPerSecond),
      requestsPerSecond: all.requests / durationSeconds,
      requests: all.requests,
      ok: all.ok,
      latency: all.latency,
      okLatency: all.okLatency,
      refusedLatency: all.refusedLatency,
      errors: all.errors,
      errorRate: all.requests === 0 ? 0 : (all.requests - all.ok) / all.requests,
      healthz,
      healthzFloor,
      eventLoopDelayP99MaxMs: peak((sample) => sample.eventLoopDelayP99Ms),
      libuvCanaryMaxMs: peak((sample) => sample.libuvCanaryMs),
      cpuCoresMean: cpu.length === 0 ? null : cpu.reduce((sum, value) => sum + value, 0) / cpu.length,
      peakRssBytes: peak((sample) => sample.processTreeRssBytes ?? sample.rssBytes),
    },
  }
}

function closedLoad (virtualUsers: number): LoadSpec {
  return {
    model: 'closed',
    startVus: 0,
    stages: [{ durationMs: 10_000, target: virtualUsers }, { durationMs: 20_000, target: virtualUsers }],
    thinkTimeMs: 0,
    requestTimeoutMs: 30_000,
    healthzProbeRate: 5,
    workers: 2,
    honourRetryAfter: true,
    accounts: 500,
  }
}

function base (command: LabResult['command'], scenario: ScenarioInfo, load: LoadSpec, runs: RunResult[], references: ReferenceFigures[]): LabResult {
  return {
    schema: labResultSchema,
    command,
    createdAt: '2026-03-20T10:01:00.000Z',
    commandLine: `tollbooth lab ${command} --scenario ${scenario.name}`,
    machine: machine(),
    scenario,
    load,
    runs,
    references,
    warnings: [],
  }
}

const tollboothProfile: Profile = { label: 'tollbooth', strategy: 'tollbooth', achievedPerSecond: 24, p50Ms: 350, p95Ms: 780, p99Ms: 950, timeoutShare: 0, overloadedShare: 0.3, healthzP99Ms: 4, eventLoopP99Ms: 9, libuvCanaryMs: 1.5, cpuCores: 1.95, rssMiB: 150, processTree: false, hashQueue: true }

/** `lab run`: 100 virtual users register, log in and post (the Piscina article's k6 flow) against tollbooth. */
export function runFixture (): LabResult {
  const endpoints = ['POST /auth/register', 'POST /auth/login', 'POST /posts']
  const run = syntheticRun({ ...tollboothProfile, label: 'run' }, { endpoints, seconds: 30, rampSeconds: 10, virtualUsers: 100, offeredAt: null }, 1)
  return base('run', { name: 'auth-mix', description: 'register, log in and post, as the Piscina article\'s k6 test', endpoints }, closedLoad(100), [run], [])
}

/** A registration knee search: +10 % every 5 s from 100/s; holds to ~259/s, breaks at ~285/s. */
export function kneeFixture (): LabResult {
  const endpoints = ['POST /auth/register']
  const startRate = 100
  const stepSeconds = 5
  const rates = Array.from({ length: 12 }, (_, index) => startRate * 1.1 ** index)
  const capacityPerSecond = 262
  const stepOf = (t: number): number => Math.min(rates.length - 1, Math.floor((t - 1) / stepSeconds))
  const rateAt = (t: number): number => rates[stepOf(t)] ?? startRate
  const profile: Profile = { label: 'knee', strategy: 'libuv', achievedPerSecond: capacityPerSecond, p50Ms: 30, p95Ms: 45, p99Ms: 60, timeoutShare: 0, overloadedShare: 0, healthzP99Ms: 3, eventLoopP99Ms: 11, libuvCanaryMs: 2, cpuCores: 1.9, rssMiB: 120, processTree: false, hashQueue: false }
  // Latency stays low until the pool saturates, then climbs steeply (the registration article's curve).
  const latencyAt = (t: number): number => { const load = rateAt(t) / capacityPerSecond; return load < 0.9 ? 1 : 1 + (load - 0.9) * 160 }
  const run = syntheticRun(profile, {
    endpoints, seconds: rates.length * stepSeconds, rampSeconds: 0, virtualUsers: null, offeredAt: rateAt, latencyAt, achievedAt: (t) => Math.min(rateAt(t), capacityPerSecond),
  }, 2)
  const criteria = { startRate, stepFactor: 0.1, stepDurationMs: stepSeconds * 1000, throughputMargin: 0.05, p99LimitMs: 1000, errorRateLimit: 0.01, maxSteps: 20 }
  const steps: KneeStep[] = rates.map((offeredPerSecond, index) => {
    const load = offeredPerSecond / capacityPerSecond
    const achievedPerSecond = Math.min(offeredPerSecond, capacityPerSecond) * (load > 1 ? 0.98 : 1)
    const scale = load < 0.9 ? 1 : 1 + (load - 0.9) * 160
    const figures = latency(Math.round(achievedPerSecond * stepSeconds), 30 * scale, 45 * scale, 60 * scale)
    const failedBecause = [
      ...(achievedPerSecond < offeredPerSecond * (1 - criteria.throughputMargin) ? [`achieved ${achievedPerSecond.toFixed(0)}/s < ${(offeredPerSecond * 0.95).toFixed(0)}/s`] : []),
      ...((figures.p99Ms ?? 0) > criteria.p99LimitMs ? [`p99 ${(figures.p99Ms ?? 0).toFixed(0)} ms > 1000 ms`] : []),
    ]
    return {
      index: index + 1,
      offeredPerSecond,
      achievedPerSecond,
      latency: figures,
      errorRate: 0,
      dropped: Math.max(0, Math.round((offeredPerSecond - capacityPerSecond * 1.04) * stepSeconds)),
      startT: index * stepSeconds,
      endT: (index + 1) * stepSeconds,
      held: failedBecause.length === 0,
      failedBecause,
    }
  })
  const lastHeld = [...steps].reverse().find((step) => step.held)
  const failed = steps.find((step) => !step.held)
  const load: LoadSpec = {
    model: 'open',
    startRate,
    stages: rates.map((target) => ({ durationMs: stepSeconds * 1000, target })),
    maxInFlight: 1000,
    requestTimeoutMs: 10_000,
    healthzProbeRate: 5,
    workers: 2,
    honourRetryAfter: false,
    accounts: 0,
  }
  const result = base('knee', { name: 'register-ramp', description: 'registrations at a rising rate, +10 % a step (the registration article\'s ramp)', endpoints }, load, [run], [{
    source: 'registration-load-ramp.txt',
    strategy: 'libuv',
    setup: 'Next.js and PostgreSQL on an 8-core laptop, loadtest, +10 % RPS a run',
    kneePerSecond: 250,
    p50Ms: 50,
    note: 'latency below 50 ms until about 250 RPS, then it rises very rapidly',
  }])
  result.knee = {
    criteria,
    steps,
    kneePerSecond: lastHeld?.offeredPerSecond ?? null,
    stoppedBecause: failed === undefined ? 'the last step held' : `step ${failed.index + 1} failed: ${failed.failedBecause.join('; ')}`,
  }
  return result
}

/** The seven strategies under the login storm, shaped as the articles describe them (2 cores, bcrypt cost 10). */
const compareProfiles: Profile[] = [
  { label: 'event-loop', strategy: 'event-loop', achievedPerSecond: 11, p50Ms: 8900, p95Ms: 9800, p99Ms: 10400, timeoutShare: 0.02, overloadedShare: 0, healthzP99Ms: 4800, eventLoopP99Ms: 950, libuvCanaryMs: 900, cpuCores: 1, rssMiB: 95, processTree: false, hashQueue: false },
  { label: 'libuv', strategy: 'libuv', achievedPerSecond: 24, p50Ms: 3900, p95Ms: 4300, p99Ms: 4600, timeoutShare: 0.01, overloadedShare: 0, healthzP99Ms: 6, eventLoopP99Ms: 12, libuvCanaryMs: 4100, cpuCores: 2, rssMiB: 110, processTree: false, hashQueue: false },
  { label: 'libuv-128', strategy: 'libuv-128', achievedPerSecond: 23, p50Ms: 3800, p95Ms: 4000, p99Ms: 4200, timeoutShare: 0, overloadedShare: 0, healthzP99Ms: 25, eventLoopP99Ms: 14, libuvCanaryMs: 60, cpuCores: 2, rssMiB: 240, processTree: false, hashQueue: false },
  { label: 'spawn', strategy: 'spawn', achievedPerSecond: 14, p50Ms: 5800, p95Ms: 6900, p99Ms: 7600, timeoutShare: 0.03, overloadedShare: 0, healthzP99Ms: 40, eventLoopP99Ms: 8, libuvCanaryMs: 2, cpuCores: 2, rssMiB: 2100, processTree: true, hashQueue: false },
  { label: 'piscina', strategy: 'piscina', achievedPerSecond: 24, p50Ms: 3700, p95Ms: 4100, p99Ms: 4400, timeoutShare: 0, overloadedShare: 0, healthzP99Ms: 5, eventLoopP99Ms: 10, libuvCanaryMs: 2, cpuCores: 2, rssMiB: 160, processTree: false, hashQueue: true },
  { label: 'cluster', strategy: 'cluster', achievedPerSecond: 23, p50Ms: 3800, p95Ms: 4300, p99Ms: 4700, timeoutShare: 0.01, overloadedShare: 0, healthzP99Ms: 2500, eventLoopP99Ms: null, libuvCanaryMs: null, cpuCores: 2, rssMiB: 210, processTree: true, hashQueue: false },
  tollboothProfile,
]

/** The articles' figures for the setups our strategies reproduce: theirs, never ours. */
function compareReferences (): ReferenceFigures[] {
  const loginStorm = 'login-storm-bcrypt-nestjs-k8s.txt'
  const k8s = 'NestJS on Kubernetes, 1 CPU limit, 100 VUs, bcrypt cost 10'
  return [
    { source: 'piscina-cluster-5000-users.txt', strategy: 'event-loop', setup: 'k6, 100 VUs: register, log in, post; bcrypt on the main thread', requestsPerSecond: 62, meanMs: 263.27, p50Ms: 69.51, p95Ms: 1520 },
    { source: loginStorm, strategy: 'libuv', setup: `${k8s}, 4 libuv threads`, p95Ms: 15000, p99Ms: 30000, errorRate: 0.34, note: 'p99 hit the 30 s client timeout; 504s at the ingress' },
    { source: 'Pool Starvation (loke.dev): the secret four-thread pool of libuv', strategy: 'libuv', setup: '6 pbkdf2 calls on the 4-thread pool', note: 'requests 5 and 6 took ~175 ms against ~90 ms: they waited for a thread' },
    { source: loginStorm, strategy: 'libuv-128', setup: `${k8s}, UV_THREADPOOL_SIZE=128`, p95Ms: 4000, note: 'p95 "from 15s to around 4s"' },
    { source: loginStorm, strategy: 'spawn', setup: `${k8s}, a native script spawned per compare`, p95Ms: 380, p99Ms: 650, errorRate: 0 },
    { source: 'piscina-cluster-5000-users.txt', strategy: 'piscina', setup: 'k6, 100 VUs: register, log in, post; Piscina and cluster together', requestsPerSecond: 114, meanMs: 51.3, p95Ms: 96.15 },
  ]
}

/** `lab compare`: the login storm against each strategy in turn. */
export function compareFixture (): LabResult {
  const endpoints = ['POST /auth/login']
  const runs = compareProfiles.map((profile, index) => syntheticRun(profile, { endpoints, seconds: 30, rampSeconds: 10, virtualUsers: 100, offeredAt: null }, 10 + index))
  const result = base('compare', { name: 'login-storm', description: '100 users log in at once (the login-storm article\'s k6 test)', endpoints }, closedLoad(100), runs, compareReferences())
  result.warnings.push('cluster: the primary does not report event-loop delay or the libuv canary of its workers')
  return result
}
