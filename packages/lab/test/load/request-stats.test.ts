import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { EndpointStats, LatencySummary } from '../../src/result.js'
import { scheduledSeconds } from '../../src/load/runner.js'
import hdr from 'hdr-histogram-js'
import { createHistogram, EndpointAccumulator, EndpointMap, errorTotal, recordMs, summarise, type RequestOutcome } from '../../src/load/stats.js'

const outcome = (status: number | null, latencyMs: number, extra: Partial<RequestOutcome> = {}): RequestOutcome =>
  ({ endpoint: 'POST /auth/login', status, ok: status !== null && status >= 200 && status < 300, failure: null, retryAfter: false, latencyMs, ...extra })

describe('counting requests', () => {
  it('sorts every ending into its kind, and keeps the 2xx latency apart', () => {
    const accumulator = new EndpointAccumulator()
    accumulator.record(outcome(200, 100))
    accumulator.record(outcome(200, 300))
    accumulator.record(outcome(503, 2, { retryAfter: true }))
    accumulator.record(outcome(503, 2))
    accumulator.record(outcome(401, 90))
    accumulator.record(outcome(null, 30_000, { failure: 'timeout' }))
    accumulator.record(outcome(null, 1, { failure: 'connection' }))
    accumulator.record(outcome(null, 1, { failure: 'other' }))
    const stats = accumulator.toStats()
    assert.equal(stats.requests, 8)
    assert.equal(stats.ok, 2)
    assert.deepEqual(stats.errors, { byStatus: { 503: 2, 401: 1 }, overloaded: 1, timeouts: 1, connectionErrors: 1, other: 1 })
    assert.equal(errorTotal(stats.errors), 6)
    assert.equal(stats.latency.count, 6, 'responses and the timeout have a latency; transport failures none')
    assert.ok((stats.latency.maxMs ?? 0) >= 29_990, 'a timeout counts as the time it waited')
    assert.equal(stats.okLatency.count, 2)
    assert.ok(Math.abs((stats.okLatency.p50Ms ?? 0) - 100) < 0.2 && Math.abs((stats.okLatency.maxMs ?? 0) - 300) < 0.5)
    assert.equal(stats.refusedLatency?.count, 1, 'the 503 with Retry-After alone has a latency of its own')
    assert.ok(Math.abs((stats.refusedLatency.maxMs ?? 0) - 2) < 0.01)
  })

  /** Counts exactly; latencies to the histograms' precision (3 significant digits: 0.1 %). */
  const assertSameStats = (actual: EndpointStats, expected: EndpointStats, what: string): void => {
    assert.equal(actual.requests, expected.requests, what)
    assert.equal(actual.ok, expected.ok, what)
    assert.deepEqual(actual.errors, expected.errors, what)
    for (const key of ['latency', 'okLatency', 'refusedLatency'] as const) {
      const want = expected[key]
      const have = actual[key]
      assert.ok(want !== undefined && have !== undefined, `${what} ${key}`)
      for (const [figure, value] of Object.entries(want) as Array<[keyof LatencySummary, number | null]>) {
        const got = have[figure] ?? Number.NaN
        assert.ok(value === null ? have[figure] === null : Math.abs(got - value) <= value * 0.001 + 1e-9, `${what} ${key}.${figure}: ${got} vs ${String(value)}`)
      }
    }
  }

  it('merges partials from other threads into what one accumulator would have', () => {
    const direct = new EndpointMap()
    const parts = [new EndpointMap(), new EndpointMap()]
    for (let i = 0; i < 1000; i++) {
      const one = outcome(i % 10 === 0 ? 503 : 200, 1 + (i % 97), { endpoint: i % 3 === 0 ? 'GET /me' : 'POST /auth/login', retryAfter: true })
      direct.get(one.endpoint).record(one)
      parts[i % 2]?.get(one.endpoint).record(one)
    }
    const merged = new EndpointMap()
    for (const part of parts) merged.addPartials(part.toPartials())
    const order = ['POST /auth/login', 'GET /me']
    const mergedStats = merged.toStats(order)
    const directStats = direct.toStats(order)
    assert.deepEqual(Object.keys(mergedStats), order, 'in report order')
    for (const name of order) assertSameStats(mergedStats[name] as EndpointStats, directStats[name] as EndpointStats, name)
    assertSameStats(merged.all().toStats(), direct.all().toStats(), 'all')
  })
})

describe('the seconds a run\'s rates are per', () => {
  const second = (t: number, offered: number): { t: number, offered: number } => ({ t, offered })

  it('are the schedule\'s: a late start or a completion in the drain after it does not count', () => {
    // As an open crowd of 25 s ends: second 26 holds 3 arrivals of second 25 sent late, and completions.
    const seconds = [...Array.from({ length: 25 }, (_, i) => second(i + 1, 7981)), second(26, 0)]
    assert.equal(scheduledSeconds(seconds), 25)
  })

  it('span from the first second with work offered to the last, quiet seconds between included', () => {
    assert.equal(scheduledSeconds([second(1, 0), second(2, 5), second(3, 0), second(4, 5), second(5, 0)]), 3)
  })

  it('are 1 for a run that offered nothing, so a rate is never divided by 0', () => {
    assert.equal(scheduledSeconds([]), 1)
    assert.equal(scheduledSeconds([second(1, 0)]), 1)
  })
})

describe('a latency summary', () => {
  /** The library's own figures, walked once per percentile and once for the mean: what summarise must give. */
  const libraryFigures = (histogram: hdr.Histogram): LatencySummary => {
    const ms = (micros: number): number => Math.round(micros) / 1000
    const at = (percentile: number): number => ms(histogram.getValueAtPercentile(percentile))
    return { count: histogram.totalCount, meanMs: ms(histogram.mean), p50Ms: at(50), p90Ms: at(90), p95Ms: at(95), p99Ms: at(99), maxMs: ms(histogram.maxValue) }
  }
  /** A fixed stream of pseudo-random numbers in [0, 1), so a failure can be replayed. */
  const stream = (seed: number): () => number => () => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed / 2147483648
  }

  it('gives the library\'s percentiles and mean, in one walk, for any spread of latencies', () => {
    const random = stream(11)
    const shapes: Array<[string, () => number]> = [
      ['one value', () => 42],
      ['sub-millisecond', () => 0.05 + random() * 0.9],
      ['uniform to 2 s', () => random() * 2000],
      ['long tail', () => 1 / Math.max(1e-6, random()) ** 2],
      ['two modes', () => (random() < 0.97 ? 3 + random() : 1000 + random() * 29_000)],
      ['at the ceiling', () => 599_999_000 + random() * 5_000],
    ]
    for (const [name, next] of shapes) {
      for (const size of [1, 2, 7, 100, 5_000]) {
        const histogram = createHistogram()
        for (let i = 0; i < size; i++) recordMs(histogram, next())
        assert.deepEqual(summarise(histogram), libraryFigures(histogram), `${name}, ${size} values`)
        // As the main thread merges a generator thread's: decoded from its compressed form.
        const decoded = hdr.decodeFromCompressedBase64(hdr.encodeIntoCompressedBase64(histogram))
        assert.deepEqual(summarise(decoded), libraryFigures(decoded), `${name}, ${size} values, decoded`)
      }
    }
  })

  it('says nothing of an empty histogram but its count', () => {
    assert.deepEqual(summarise(createHistogram()), { count: 0, meanMs: null, p50Ms: null, p90Ms: null, p95Ms: null, p99Ms: null, maxMs: null })
  })
})
