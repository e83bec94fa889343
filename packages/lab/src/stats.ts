/**
 * Counting requests: one accumulator per endpoint per second, in each load
 * generator thread; partials (counts + an encoded histogram) travel to the main
 * thread, where they are merged into the run's seconds and totals.
 */
import { addEncoded, createHistogram, encodeHistogram, recordMs, summarise, type LatencyHistogram } from './histogram.js'
import type { EndpointStats, ErrorCounts } from './result.js'

export type TransportFailure = 'timeout' | 'connection' | 'other'

/** How one request ended. */
export interface RequestOutcome {
  endpoint: string
  /** The response's status; null when none came (see `failure`). */
  status: number | null
  failure: TransportFailure | null
  /** The response carried a Retry-After header. */
  retryAfter: boolean
  /** From the intended send time (open model) or the send (closed model). */
  latencyMs: number
}

export function emptyErrors (): ErrorCounts {
  return { byStatus: {}, overloaded: 0, timeouts: 0, connectionErrors: 0, other: 0 }
}

export function addErrors (into: ErrorCounts, from: ErrorCounts): void {
  for (const [status, count] of Object.entries(from.byStatus)) into.byStatus[status] = (into.byStatus[status] ?? 0) + count
  into.overloaded += from.overloaded
  into.timeouts += from.timeouts
  into.connectionErrors += from.connectionErrors
  into.other += from.other
}

export function errorTotal (errors: ErrorCounts): number {
  return Object.values(errors.byStatus).reduce((sum, n) => sum + n, 0) + errors.timeouts + errors.connectionErrors + errors.other
}

/** What a generator thread sends for one endpoint: structured-clone friendly. */
export interface EndpointPartial {
  requests: number
  ok: number
  errors: ErrorCounts
  /** Encoded HDR histogram of latencies, or '' when nothing was recorded. */
  histogram: string
  /** The same for the 2xx responses alone. */
  okHistogram: string
}

export class EndpointAccumulator {
  requests = 0
  ok = 0
  errors = emptyErrors()
  readonly histogram: LatencyHistogram = createHistogram()
  readonly okHistogram: LatencyHistogram = createHistogram()

  record (outcome: RequestOutcome): void {
    this.requests++
    if (outcome.status !== null) {
      recordMs(this.histogram, outcome.latencyMs)
      if (outcome.status >= 200 && outcome.status < 300) {
        this.ok++
        recordMs(this.okHistogram, outcome.latencyMs)
      } else {
        const key = String(outcome.status)
        this.errors.byStatus[key] = (this.errors.byStatus[key] ?? 0) + 1
        if (outcome.status === 503 && outcome.retryAfter) this.errors.overloaded++
      }
      return
    }
    switch (outcome.failure) {
      case 'timeout':
        // A timeout is a latency too (at least the timeout): leaving it out would flatter p99.
        recordMs(this.histogram, outcome.latencyMs)
        this.errors.timeouts++
        break
      case 'connection': this.errors.connectionErrors++; break
      default: this.errors.other++
    }
  }

  toPartial (): EndpointPartial {
    const encode = (histogram: LatencyHistogram): string => (histogram.totalCount === 0 ? '' : encodeHistogram(histogram))
    return { requests: this.requests, ok: this.ok, errors: this.errors, histogram: encode(this.histogram), okHistogram: encode(this.okHistogram) }
  }

  addPartial (partial: EndpointPartial): void {
    this.requests += partial.requests
    this.ok += partial.ok
    addErrors(this.errors, partial.errors)
    if (partial.histogram !== '') addEncoded(this.histogram, partial.histogram)
    if (partial.okHistogram !== '') addEncoded(this.okHistogram, partial.okHistogram)
  }

  add (other: EndpointAccumulator): void {
    this.requests += other.requests
    this.ok += other.ok
    addErrors(this.errors, other.errors)
    this.histogram.add(other.histogram)
    this.okHistogram.add(other.okHistogram)
  }

  toStats (): EndpointStats {
    return { requests: this.requests, ok: this.ok, latency: summarise(this.histogram), okLatency: summarise(this.okHistogram), errors: structuredClone(this.errors) }
  }
}

/** Accumulators by endpoint name, created on first use. */
export class EndpointMap {
  readonly byName = new Map<string, EndpointAccumulator>()

  get (name: string): EndpointAccumulator {
    let accumulator = this.byName.get(name)
    if (accumulator === undefined) {
      accumulator = new EndpointAccumulator()
      this.byName.set(name, accumulator)
    }
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

  addPartials (partials: Record<string, EndpointPartial>): void {
    for (const [name, partial] of Object.entries(partials)) this.get(name).addPartial(partial)
  }

  add (other: EndpointMap): void {
    for (const [name, accumulator] of other.byName) this.get(name).add(accumulator)
  }

  toStats (order: readonly string[] = []): Record<string, EndpointStats> {
    const names = [...order.filter((name) => this.byName.has(name)), ...[...this.byName.keys()].filter((name) => !order.includes(name))]
    return Object.fromEntries(names.map((name) => [name, this.get(name).toStats()]))
  }
}
