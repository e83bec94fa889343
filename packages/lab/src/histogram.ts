/**
 * Latency histograms (HDR, as autocannon and wrk2 keep them): values are
 * recorded in microseconds, 3 significant digits, up to 10 minutes, so a
 * percentile is exact to 0.1 % whatever the spread of a run. Load-generator
 * threads send theirs to the main thread encoded, where they are merged.
 * Plain JS histograms (not WebAssembly): the garbage collector frees them, no destroy().
 */
import hdr from 'hdr-histogram-js'
import type { LatencySummary } from './result.js'

export type LatencyHistogram = hdr.Histogram

const highestTrackableMicros = 600_000_000

export function createHistogram (): LatencyHistogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: highestTrackableMicros, numberOfSignificantValueDigits: 3, autoResize: false })
}

export function recordMs (histogram: LatencyHistogram, ms: number): void {
  histogram.recordValue(Math.min(highestTrackableMicros, Math.max(1, Math.round(ms * 1000))))
}

export function encodeHistogram (histogram: LatencyHistogram): string {
  return hdr.encodeIntoCompressedBase64(histogram)
}

/** Adds an encoded histogram (from another thread) into `into`. */
export function addEncoded (into: LatencyHistogram, encoded: string): void {
  into.add(hdr.decodeFromCompressedBase64(encoded))
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000

export function summarise (histogram: LatencyHistogram): LatencySummary {
  const count = histogram.totalCount
  if (count === 0) return emptySummary()
  const at = (p: number): number => round(histogram.getValueAtPercentile(p) / 1000)
  return {
    count,
    meanMs: round(histogram.mean / 1000),
    p50Ms: at(50),
    p90Ms: at(90),
    p95Ms: at(95),
    p99Ms: at(99),
    maxMs: round(histogram.maxValue / 1000),
  }
}

export function emptySummary (): LatencySummary {
  return { count: 0, meanMs: null, p50Ms: null, p90Ms: null, p95Ms: null, p99Ms: null, maxMs: null }
}
