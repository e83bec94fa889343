/**
 * Prometheus metrics (prom-client), one registry per app so several apps can live in one process
 * (tests, the lab). Besides HTTP and the hash pool it keeps two canaries from the pool-starvation
 * article: event-loop delay and the latency of a tiny libuv-pool-bound operation, every second.
 *
 * Under `serve --workers` (and the lab's cluster strategy) each worker has its own registry and
 * /metrics answers the aggregate (cluster-metrics.ts); each gauge says how it combines
 * (`aggregator`); counters and histograms sum.
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import client from 'prom-client'
import { hashMallocState } from '../machine/index.js'
import type { PasswordEngine } from '../hashing/index.js'
import { clusterMetrics, exposeRegistryToPrimary } from './cluster-metrics.js'

export interface Metrics {
  registry: client.Registry
  contentType: string
  /** The exposition text: this process's registry, or every cluster worker's, aggregated. */
  render (): Promise<string>
  observeRequest (method: string, route: string, status: number, seconds: number): void
  /** One API request refused by load shedding (overload/shedding.ts), by reason. */
  observeShed (reason: string): void
  /** Where the API requests in flight are read at each scrape (overload/shedding.ts); 0 until set. */
  readInFlight (read: () => { capped: number, ownAdmission: number }): void
  close (): void
}

export interface MetricsOptions {
  /** Labels of `tollbooth_info`: the package version and the strategy (`tollbooth`, or the lab harness's). */
  info: { version: string, strategy: string }
  /** This process is one of several on one port (`serve --workers`): /metrics aggregates them all. */
  clusterWorker?: boolean
  canaryIntervalMs?: number
  /** The reasons load shedding refuses for, each exported from the start (0 until it happens). */
  shedReasons?: readonly string[]
  /** Paced refusals (overload/pacing.ts): held now, and held since the start. */
  pacing?: () => { held: number, heldTotal: number }
}

const hashBucketsSeconds = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** The sampling interval of `nodejs_eventloop_lag_*`, which every figure includes: exported so a reader can take it out. */
const eventLoopResolutionMs = 10

export function createMetrics (engine: PasswordEngine, options: MetricsOptions): Metrics {
  const registry = new client.Registry()
  const mallocSettings = hashMallocState()
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: eventLoopResolutionMs })
  new client.Gauge({
    name: 'tollbooth_event_loop_resolution_seconds',
    help: 'Sampling interval of the nodejs_eventloop_lag_* figures, which include it (an idle loop reads about this much): subtract it for the delay itself',
    registers: [registry],
    aggregator: 'max',
  }).set(eventLoopResolutionMs / 1000)

  new client.Gauge({
    name: 'tollbooth_info',
    help: 'The running service: version, configured hash strategy, algorithm for new hashes, Node.js version (value is always 1)',
    labelNames: ['version', 'strategy', 'algorithm', 'node_version'] as const,
    registers: [registry],
    aggregator: 'first',
    collect () {
      this.reset()
      this.set({ version: options.info.version, strategy: options.info.strategy, algorithm: engine.policy.algorithm, node_version: process.version }, 1)
    },
  })

  const httpDuration = new client.Histogram({
    name: 'tollbooth_http_request_duration_seconds',
    help: 'HTTP request duration by route and status; the in-flight cap\'s refusals, answered before Fastify, are counted in tollbooth_requests_shed_total alone',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  })

  new client.Gauge({
    name: 'tollbooth_hash_pool_threads',
    help: 'Threads that run password hashes',
    registers: [registry],
    aggregator: 'sum',
    collect () { this.set(engine.stats().threads) },
  })
  new client.Gauge({
    name: 'tollbooth_hash_pool_running',
    help: 'Hashes running now',
    registers: [registry],
    aggregator: 'sum',
    collect () { this.set(engine.stats().running) },
  })
  new client.Gauge({
    name: 'tollbooth_hash_pool_queued',
    help: 'Hash requests waiting for a thread',
    registers: [registry],
    aggregator: 'sum',
    collect () { this.set(engine.stats().queued) },
  })
  new client.Gauge({
    name: 'tollbooth_hash_pool_mean_run_seconds',
    help: 'Recent mean run time of one hash, as admission control sees it',
    registers: [registry],
    aggregator: 'average',
    collect () { this.set(engine.stats().meanRunMs / 1000) },
  })
  new client.Gauge({
    name: 'tollbooth_hash_pool_info',
    help: 'Hash execution strategy, algorithm, CPU budget, and whether glibc\'s malloc settings for large scrypt buffers are set (set, missing, not applicable) (value is always 1)',
    labelNames: ['strategy', 'algorithm', 'cpu_budget', 'cpu_budget_source', 'malloc_settings'] as const,
    registers: [registry],
    aggregator: 'first',
    collect () {
      this.reset()
      this.set({ strategy: engine.strategy, algorithm: engine.policy.algorithm, cpu_budget: String(engine.cpuBudget.cpus), cpu_budget_source: engine.cpuBudget.source, malloc_settings: mallocSettings }, 1)
    },
  })
  const hashTasks = new client.Counter({
    name: 'tollbooth_hash_tasks_total',
    help: 'Hash requests by kind and outcome (ok, rejected at admission, deadline passed in queue, cancelled, error)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  })
  const hashWait = new client.Histogram({
    name: 'tollbooth_hash_wait_seconds',
    help: 'Time a hash request waited in the queue before a thread took it',
    labelNames: ['kind'] as const,
    buckets: hashBucketsSeconds,
    registers: [registry],
  })
  const hashRun = new client.Histogram({
    name: 'tollbooth_hash_run_seconds',
    help: 'Time one hash or verify ran on its thread',
    labelNames: ['kind'] as const,
    buckets: hashBucketsSeconds,
    registers: [registry],
  })
  const unsubscribe = engine.onTask((event) => {
    hashTasks.inc({ kind: event.kind, outcome: event.outcome })
    if (event.outcome === 'ok') {
      hashWait.observe({ kind: event.kind }, event.waitMs / 1000)
      hashRun.observe({ kind: event.kind }, event.runMs / 1000)
    }
  })

  const shed = new client.Counter({
    name: 'tollbooth_requests_shed_total',
    help: 'API requests refused at once with 503 SERVICE_OVERLOADED by load shedding, before their body was read: event-loop delay or utilisation over its bound, or requests in flight at the cap',
    labelNames: ['reason'] as const,
    registers: [registry],
  })
  // Children made once: counting a refusal must not cost a label lookup each time.
  const shedByReason = new Map<string, client.Counter.Internal>()
  const shedChild = (reason: string): client.Counter.Internal => {
    let child = shedByReason.get(reason)
    if (child === undefined) {
      child = shed.labels({ reason })
      shedByReason.set(reason, child)
    }
    return child
  }
  for (const reason of options.shedReasons ?? []) shedChild(reason).inc(0)
  let readInFlight: () => { capped: number, ownAdmission: number } = () => ({ capped: 0, ownAdmission: 0 })
  new client.Gauge({
    name: 'tollbooth_api_requests_in_flight',
    help: 'API requests in flight: under the in-flight cap (capped), or on the hash routes, which have an admission of their own and are counted apart (own_admission)',
    labelNames: ['counted'] as const,
    registers: [registry],
    aggregator: 'sum',
    collect () {
      const now = readInFlight()
      this.set({ counted: 'capped' }, now.capped)
      this.set({ counted: 'own_admission' }, now.ownAdmission)
    },
  })

  const pacing = options.pacing ?? (() => ({ held: 0, heldTotal: 0 }))
  new client.Gauge({
    name: 'tollbooth_refusals_held',
    help: 'Requests held now because their client came back before its Retry-After and would be refused again (pacing)',
    registers: [registry],
    aggregator: 'sum',
    collect () { this.set(pacing().held) },
  })
  new client.Counter({
    name: 'tollbooth_refusals_held_total',
    help: 'Requests held since the start because their client came back before its Retry-After (pacing)',
    registers: [registry],
    aggregator: 'sum',
    collect () {
      this.reset()
      this.inc(pacing().heldTotal)
    },
  })

  const canary = new client.Histogram({
    name: 'tollbooth_libuv_canary_seconds',
    help: 'Latency of a tiny libuv-pool-bound operation (crypto.randomBytes(16, cb)) sampled every second: high values mean the shared pool is starved',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  })
  const canaryLast = new client.Gauge({
    name: 'tollbooth_libuv_canary_last_seconds',
    help: 'The latest libuv canary latency',
    registers: [registry],
    aggregator: 'max',
  })
  /** performance.now() when the canary in libuv's pool was queued; undefined when none is. */
  let canaryQueuedAt: number | undefined
  new client.Gauge({
    name: 'tollbooth_libuv_canary_pending_seconds',
    help: 'Age of the libuv canary still waiting in the pool (0 when none is): a starved pool shows here while it lasts, not only once the canary returns',
    registers: [registry],
    aggregator: 'max',
    collect () { this.set(canaryQueuedAt === undefined ? 0 : (performance.now() - canaryQueuedAt) / 1000) },
  })
  const canaryTimer = setInterval(() => {
    if (canaryQueuedAt !== undefined) return // a starved pool must not pile up canaries
    const queuedAt = performance.now()
    canaryQueuedAt = queuedAt
    randomBytes(16, () => {
      canaryQueuedAt = undefined
      const seconds = (performance.now() - queuedAt) / 1000
      canary.observe(seconds)
      canaryLast.set(seconds)
    })
  }, options.canaryIntervalMs ?? 1000)
  canaryTimer.unref()

  // Per process, labelled by pid, so the aggregate shows each worker apart: its pool and the requests it answered.
  const workerRequests = options.clusterWorker === true
    ? new client.Counter({
      name: 'tollbooth_worker_http_requests_total',
      help: 'HTTP requests answered by each worker process (serve --workers, the cluster strategy), by pid, the in-flight cap\'s refusals aside; a replaced worker starts again from 0',
      labelNames: ['pid'] as const,
      registers: [registry],
    })
    : undefined
  if (options.clusterWorker === true) {
    new client.Gauge({
      name: 'tollbooth_worker_hash_pool_threads',
      help: 'Hash threads in each worker process\'s pool, by pid',
      labelNames: ['pid'] as const,
      registers: [registry],
      aggregator: 'sum',
      collect () { this.set({ pid: String(process.pid) }, engine.stats().threads) },
    })
    exposeRegistryToPrimary(registry)
  }

  return {
    registry,
    contentType: registry.contentType,
    render: options.clusterWorker === true ? clusterMetrics : async () => await registry.metrics(),
    observeRequest (method, route, status, seconds) {
      httpDuration.observe({ method, route, status: String(status) }, seconds)
      workerRequests?.inc({ pid: String(process.pid) })
    },
    observeShed (reason) {
      shedChild(reason).inc()
    },
    readInFlight (read) {
      readInFlight = read
    },
    close () {
      clearInterval(canaryTimer)
      unsubscribe()
    },
  }
}
