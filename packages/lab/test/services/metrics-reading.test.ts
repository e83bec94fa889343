import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MetricsSnapshot, parsePrometheusText } from '../../src/services/prometheus.js'
import { serverSample } from '../../src/services/scraper.js'

const exposition = (cpu: number, waitSum: number, waitCount: number, rejected: number | null, canaryPending = 0, canaries = 2, resolution = ''): string => `
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total ${cpu}
process_resident_memory_bytes 123456789
nodejs_eventloop_lag_p99_seconds 0.0125
nodejs_eventloop_lag_max_seconds 0.25
tollbooth_hash_pool_queued 7
tollbooth_hash_pool_running 2
tollbooth_hash_wait_seconds_sum{kind="verify"} ${waitSum}
tollbooth_hash_wait_seconds_count{kind="verify"} ${waitCount}
tollbooth_hash_wait_seconds_bucket{le="+Inf",kind="verify"} ${waitCount}
tollbooth_hash_tasks_total{kind="verify",outcome="ok"} 10
${rejected === null ? '' : `tollbooth_hash_tasks_total{kind="verify",outcome="rejected"} ${rejected}`}
tollbooth_libuv_canary_seconds_sum ${canaries * 0.002}
tollbooth_libuv_canary_seconds_count ${canaries}
tollbooth_libuv_canary_pending_seconds ${canaryPending}
tollbooth_info{version="0.1.0",strategy="tollbooth",algorithm="bcrypt",node_version="v20"} 1
${resolution}
`

describe('reading /metrics', () => {
  it('parses samples, labels (with escapes) and special values', () => {
    const samples = parsePrometheusText('a_total{path="/x",msg="say \\"hi\\"\\n"} 3\nb 1.5e3\nc_bucket{le="+Inf"} +Inf 1700000000\n# comment\n\ngarbage line here')
    assert.deepEqual(samples[0], { name: 'a_total', labels: { path: '/x', msg: 'say "hi"\n' }, value: 3 })
    assert.equal(samples[1]?.value, 1500)
    assert.equal(samples[2]?.value, Number.POSITIVE_INFINITY)
    assert.equal(samples.length, 3)
  })

  it('sums matching series; 0 for a labelled series not counted yet, null for a missing metric', () => {
    const snapshot = MetricsSnapshot.parse(exposition(1, 0, 0, null))
    assert.equal(snapshot.sum('tollbooth_hash_tasks_total'), 10)
    assert.equal(snapshot.sum('tollbooth_hash_tasks_total', { outcome: 'rejected' }), 0)
    assert.equal(snapshot.sum('no_such_metric'), null)
    assert.deepEqual(snapshot.labelsOf('tollbooth_info'), { version: '0.1.0', strategy: 'tollbooth', algorithm: 'bcrypt', node_version: 'v20' })
  })

  it('turns two readings a second apart into rates and per-second means', () => {
    const before = { atEpochMs: 10_000, metrics: MetricsSnapshot.parse(exposition(10, 1, 10, null)), tree: { cpuSeconds: 20, rssBytes: 1, processes: 1 } }
    const now = { atEpochMs: 12_000, metrics: MetricsSnapshot.parse(exposition(13, 2.5, 20, 4, 0, 4)), tree: { cpuSeconds: 23.5, rssBytes: 5_000_000, processes: 3 } }
    const sample = serverSample(7, now, before)
    assert.equal(sample.t, 7)
    assert.equal(sample.cpuCores, 1.5, '3 CPU seconds over 2 s')
    assert.equal(sample.processTreeCpuCores, 1.75)
    assert.equal(sample.processTreeRssBytes, 5_000_000)
    assert.equal(sample.rssBytes, 123456789)
    assert.equal(sample.eventLoopDelayP99Ms, 12.5)
    assert.equal(sample.eventLoopDelayMaxMs, 250)
    assert.equal(sample.hashQueued, 7)
    assert.equal(sample.hashWaitMeanMs, 150, '1.5 s of waits over 10 hashes')
    assert.equal(sample.hashRejected, 4, 'a rejected series appearing counts from 0')
    assert.equal(sample.libuvCanaryMs, 2, 'two canaries of 2 ms in the interval')
  })

  it('takes the sampling interval the service reports out of its event-loop delay figures', () => {
    const before = { atEpochMs: 0, metrics: MetricsSnapshot.parse(exposition(1, 0, 0, 0)), tree: null }
    const now = { atEpochMs: 1000, metrics: MetricsSnapshot.parse(exposition(1, 0, 0, 0, 0, 2, 'tollbooth_event_loop_resolution_seconds 0.01')), tree: null }
    const sample = serverSample(1, now, before)
    assert.equal(sample.eventLoopDelayP99Ms, 2.5, '12.5 ms read, of which 10 ms the interval')
    assert.equal(sample.eventLoopDelayMaxMs, 240)
    const idle = MetricsSnapshot.parse(exposition(1, 0, 0, 0, 0, 2, 'tollbooth_event_loop_resolution_seconds 0.02'))
    assert.equal(serverSample(1, { ...now, metrics: idle }, before).eventLoopDelayP99Ms, 0, 'never below 0')
  })

  it('shows a canary stuck in a starved pool by how long it has waited so far', () => {
    const before = { atEpochMs: 0, metrics: MetricsSnapshot.parse(exposition(1, 0, 0, 0)), tree: null }
    const now = { atEpochMs: 1000, metrics: MetricsSnapshot.parse(exposition(1, 0, 0, 0, 3.2)), tree: null }
    const sample = serverSample(1, now, before)
    assert.equal(sample.libuvCanaryMs, 3200)
    assert.equal(sample.processTreeCpuCores, null, 'no /proc reading: null, not 0')
  })

  it('leaves every signal null when a scrape failed', () => {
    const before = { atEpochMs: 0, metrics: null, tree: null }
    const now = { atEpochMs: 1000, metrics: MetricsSnapshot.parse(exposition(1, 0, 0, 0)), tree: null }
    const sample = serverSample(1, now, before)
    assert.equal(sample.cpuCores, null)
    assert.equal(sample.hashRejected, null)
    assert.equal(sample.hashQueued, 7, 'gauges need one reading only')
  })
})
