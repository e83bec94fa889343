/**
 * Counting iterations and requests per second and per segment in each load-generator thread; partials
 * (counts and encoded HDR histograms) merge in the main thread. Plain JS histograms (not WebAssembly):
 * the garbage collector frees them, no destroy().
 */
import hdr from 'hdr-histogram-js'
import type { TransportFailure } from '../http/index.js'
import type { EndpointStats, ErrorCounts, LatencySummary } from '../result.js'

export type LatencyHistogram = hdr.Histogram

const highestTrackableMicros = 600_000_000

export function createHistogram (): LatencyHistogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: highestTrackableMicros, numberOfSignificantValueDigits: 3, autoResize: false })
}

export function recordMs (histogram: LatencyHistogram, ms: number): void {
  histogram.recordValue(Math.min(highestTrackableMicros, Math.max(1, Math.round(ms * 1000))))
}

/** For another thread: '' when nothing was recorded. */
const encode = (histogram: LatencyHistogram | undefined): string => (histogram === undefined || histogram.totalCount === 0 ? '' : hdr.encodeIntoCompressedBase64(histogram))

function addEncoded (into: LatencyHistogram, encoded: string): void {
  if (encoded !== '') into.add(hdr.decodeFromCompressedBase64(encoded))
}

export function summarise (histogram: LatencyHistogram): LatencySummary {
  const ms = (micros: number): number => Math.round(micros) / 1000
  if (histogram.totalCount === 0) return { count: 0, meanMs: null, p50Ms: null, p90Ms: null, p95Ms: null, p99Ms: null, maxMs: null }
  if (histogram instanceof hdr.JsHistogram) {
    const { at, mean } = onePass(histogram, summaryPercentiles)
    return { count: histogram.totalCount, meanMs: ms(mean), p50Ms: ms(at(50)), p90Ms: ms(at(90)), p95Ms: ms(at(95)), p99Ms: ms(at(99)), maxMs: ms(histogram.maxValue) }
  }
  const at = (percentile: number): number => ms(histogram.getValueAtPercentile(percentile))
  return { count: histogram.totalCount, meanMs: ms(histogram.mean), p50Ms: at(50), p90Ms: at(90), p95Ms: at(95), p99Ms: at(99), maxMs: ms(histogram.maxValue) }
}

const summaryPercentiles = [50, 90, 95, 99]

/**
 * The percentiles (ascending, each above 0) and the mean, in one walk over the counts up to
 * the largest value recorded: the library's `getValueAtPercentile` walks them again for each
 * percentile and its `mean` once more through an iterator, which was most of the lab main
 * thread's CPU in a storm (it summarises every endpoint every second). The same figures as the
 * library's, rounding included (test/load/request-stats.test.ts).
 */
function onePass (histogram: hdr.JsHistogram, percentiles: readonly number[]): { at: (percentile: number) => number, mean: number } {
  const total = histogram.totalCount
  // As the library counts a percentile's rank: rounded up, less one ulp of float error, at least 1.
  const ranks = percentiles.map((percentile) => {
    const exact = (Math.min(percentile, 100) / 100) * total
    return Math.max(Math.ceil(exact - 2 ** (Math.floor(Math.log2(exact)) - 52)), 1)
  })
  const values = percentiles.map(() => 0)
  let next = 0
  let seen = 0
  let sum = 0
  const last = Math.min(histogram.countsArrayIndex(histogram.maxValue), histogram.countsArrayLength - 1)
  for (let index = 0; index <= last; index++) {
    const count = histogram.getCountAtIndex(index)
    if (count === 0) continue
    const value = histogram.valueFromIndex(index)
    seen += count
    sum += histogram.medianEquivalentValue(value) * count
    while (next < ranks.length && seen >= (ranks[next] ?? Infinity)) values[next++] = histogram.highestEquivalentValue(value)
  }
  return { at: (percentile) => values[percentiles.indexOf(percentile)] ?? 0, mean: sum / total }
}

export interface RequestOutcome {
  endpoint: string
  /** The response's status; null when none came (see `failure`). */
  status: number | null
  /** The answer is the request's success: a 2xx, or a 3xx for a step that succeeds by redirecting (LabRequest.redirectIsOk). */
  ok: boolean
  failure: TransportFailure | null
  /** The response carried a Retry-After header. */
  retryAfter: boolean
  /** From the intended send time (open model) or the send (closed model). */
  latencyMs: number
}

export function errorTotal (errors: ErrorCounts): number {
  return Object.values(errors.byStatus).reduce((sum, n) => sum + n, 0) + errors.timeouts + errors.connectionErrors + errors.other
}

/** What a generator thread sends for one endpoint: structured-clone friendly, histograms encoded. */
export interface EndpointPartial {
  requests: number
  ok: number
  errors: ErrorCounts
  histogram: string
  okHistogram: string
  refusedHistogram: string
}

export class EndpointAccumulator {
  requests = 0
  ok = 0
  readonly errors: ErrorCounts = { byStatus: {}, overloaded: 0, timeouts: 0, connectionErrors: 0, other: 0 }
  readonly histogram = createHistogram()
  /** The successful responses alone (2xx; 3xx for a step that succeeds by redirecting). */
  readonly okHistogram = createHistogram()
  /** The 503s with Retry-After alone: how fast a refusal came. */
  readonly refusedHistogram = createHistogram()

  record (outcome: RequestOutcome): void {
    this.requests++
    if (outcome.status !== null) {
      recordMs(this.histogram, outcome.latencyMs)
      if (outcome.ok) {
        this.ok++
        recordMs(this.okHistogram, outcome.latencyMs)
      } else {
        this.errors.byStatus[outcome.status] = (this.errors.byStatus[outcome.status] ?? 0) + 1
        if (outcome.status === 503 && outcome.retryAfter) {
          this.errors.overloaded++
          recordMs(this.refusedHistogram, outcome.latencyMs)
        }
      }
    } else if (outcome.failure === 'timeout') {
      // A timeout is a latency too (at least the timeout): leaving it out would flatter p99.
      recordMs(this.histogram, outcome.latencyMs)
      this.errors.timeouts++
    } else if (outcome.failure === 'connection') this.errors.connectionErrors++
    else this.errors.other++
  }

  toPartial (): EndpointPartial {
    return { requests: this.requests, ok: this.ok, errors: this.errors, histogram: encode(this.histogram), okHistogram: encode(this.okHistogram), refusedHistogram: encode(this.refusedHistogram) }
  }

  add (other: EndpointPartial | EndpointAccumulator): void {
    this.requests += other.requests
    this.ok += other.ok
    for (const [status, count] of Object.entries(other.errors.byStatus)) this.errors.byStatus[status] = (this.errors.byStatus[status] ?? 0) + count
    for (const key of ['overloaded', 'timeouts', 'connectionErrors', 'other'] as const) this.errors[key] += other.errors[key]
    if (other instanceof EndpointAccumulator) {
      this.histogram.add(other.histogram)
      this.okHistogram.add(other.okHistogram)
      this.refusedHistogram.add(other.refusedHistogram)
    } else {
      addEncoded(this.histogram, other.histogram)
      addEncoded(this.okHistogram, other.okHistogram)
      addEncoded(this.refusedHistogram, other.refusedHistogram)
    }
  }

  toStats (): EndpointStats {
    return { requests: this.requests, ok: this.ok, latency: summarise(this.histogram), okLatency: summarise(this.okHistogram), refusedLatency: summarise(this.refusedHistogram), errors: structuredClone(this.errors) }
  }
}

/** Accumulators by endpoint name, created on first use. */
export class EndpointMap {
  readonly byName = new Map<string, EndpointAccumulator>()

  get (name: string): EndpointAccumulator {
    let accumulator = this.byName.get(name)
    if (accumulator === undefined) this.byName.set(name, accumulator = new EndpointAccumulator())
    return accumulator
  }

  /** Every endpoint together. */
  all (): EndpointAccumulator {
    const all = new EndpointAccumulator()
    for (const accumulator of this.byName.values()) all.add(accumulator)
    return all
  }

  toPartials (): Record<string, EndpointPartial> {
    return Object.fromEntries([...this.byName].map(([name, accumulator]) => [name, accumulator.toPartial()]))
  }

  addPartials (partials: Record<string, EndpointPartial | EndpointAccumulator>): void {
    for (const [name, partial] of Object.entries(partials)) this.get(name).add(partial)
  }

  /** In `order` first, then any other endpoint in the order they came. */
  toStats (order: readonly string[] = []): Record<string, EndpointStats> {
    const names = [...order.filter((name) => this.byName.has(name)), ...[...this.byName.keys()].filter((name) => !order.includes(name))]
    return Object.fromEntries(names.map((name) => [name, this.get(name).toStats()]))
  }
}

/**
 * Iteration counters; "offered" is what the schedule asked for. `achievedInWindow` (achieved before
 * the schedule ended, a knee step's throughput) and `iterationErrors` count per segment; `inFlight`
 * (requests) and `vus` are the gauges at the end of a second.
 */
const emptyCounts = () => ({ offered: 0, started: 0, achieved: 0, achievedInWindow: 0, dropped: 0, iterationErrors: 0, inFlight: 0, vus: 0 })
export type Counts = ReturnType<typeof emptyCounts>

export interface TallyPartial {
  counts: Counts
  endpoints: Record<string, EndpointPartial>
  /** How late arrivals were sent after their intended time (open model). */
  sendLag: string
  firstIterationError: string | null
}

/** Everything one second or one segment counted, in one thread or merged from all of them. */
export class Tally {
  readonly counts = emptyCounts()
  readonly endpoints = new EndpointMap()
  sendLag: LatencyHistogram | undefined
  firstIterationError: string | null = null

  recordSendLag (ms: number): void {
    recordMs(this.sendLag ??= createHistogram(), ms)
  }

  toPartial (): TallyPartial {
    return { counts: { ...this.counts }, endpoints: this.endpoints.toPartials(), sendLag: encode(this.sendLag), firstIterationError: this.firstIterationError }
  }

  add (partial: TallyPartial): void {
    for (const key of Object.keys(this.counts) as Array<keyof Counts>) this.counts[key] += partial.counts[key]
    this.endpoints.addPartials(partial.endpoints)
    if (partial.sendLag !== '') addEncoded(this.sendLag ??= createHistogram(), partial.sendLag)
    this.firstIterationError ??= partial.firstIterationError
  }
}
