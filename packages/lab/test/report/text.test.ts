import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { formatCores, formatCount, formatMiB, formatMs, formatPercent, formatRate } from '../../src/report/format.js'
import { renderText } from '../../src/report/text.js'
import type { LabResult } from '../../src/result.js'
import { compareFixture, kneeFixture, runAt, runFixture } from '../fixtures.js'

/** The lines of a section, from its title to the next blank line. */
function sectionLines (text: string, title: string): string[] {
  const lines = text.split('\n')
  const start = lines.indexOf(title)
  assert.notEqual(start, -1, `no section "${title}" in:\n${text}`)
  const end = lines.indexOf('', start + 2)
  return lines.slice(start + 2, end === -1 ? undefined : end)
}

/** The cells of a plain-text table row (columns are two or more spaces apart). */
function cells (line: string): string[] {
  return line.trim().split(/\s{2,}/)
}

describe('number formats', () => {
  it('writes unmeasured values as an em dash', () => {
    for (const format of [formatMs, formatRate, formatPercent, formatMiB, formatCores, formatCount]) assert.equal(format(null), '—')
  })

  it('keeps three significant figures, then groups digits', () => {
    assert.deepEqual([0.4213, 4.213, 42.13, 421.3, 30000].map(formatMs), ['0.42', '4.21', '42.1', '421', '30,000'])
    assert.deepEqual([3.46, 62, 1945.4].map(formatRate), ['3.5', '62.0', '1,945'])
    assert.deepEqual([0, 0.0004, 0.034, 0.34].map(formatPercent), ['0%', '0.04%', '3.4%', '34%'])
    assert.equal(formatMiB(180 * 1048576), '180')
  })
})

describe('terminal report: compare', () => {
  const result = compareFixture()
  const text = renderText(result)

  it('has one comparison row per strategy, in the order they ran, with its figures', () => {
    const [header, rule, ...rows] = sectionLines(text, 'Comparison')
    assert.ok(header?.startsWith('strategy') === true && rule?.startsWith('---') === true)
    assert.deepEqual(rows.map((row) => cells(row)[0]), ['event-loop', 'libuv', 'libuv-128', 'spawn', 'piscina', 'cluster', 'tollbooth'])
    result.runs.forEach((run, index) => {
      const { summary } = run
      assert.deepEqual(cells(rows[index] ?? ''), [
        run.label, formatRate(summary.achievedPerSecond), formatCount(summary.achievedAfterEnd),
        formatMs(summary.latency.p50Ms), formatMs(summary.latency.p95Ms), formatMs(summary.latency.p99Ms),
        formatMs(summary.okLatency.p95Ms),
        formatPercent(summary.errorRate), formatCount(summary.errors.timeouts), formatCount(summary.errors.overloaded), formatMs(summary.refusedLatency?.p99Ms),
        formatMs(summary.healthz?.p99Ms), formatMs(summary.healthzFloor?.p99Ms),
        formatMs(summary.eventLoopDelayP99MaxMs), formatMs(summary.libuvCanaryMaxMs),
        formatCores(summary.cpuCoresMean), formatMiB(summary.peakRssBytes),
      ], run.label)
    })
  })

  it('shows an unmeasured figure as — (cluster reports no event-loop delay)', () => {
    const cluster = sectionLines(text, 'Comparison').find((line) => line.startsWith('cluster'))
    assert.deepEqual(cells(cluster ?? '').slice(13, 15), ['—', '—'])
  })

  it('labels the articles\' figures as theirs, in a table of their own, in the order of our strategies', () => {
    const comparison = sectionLines(text, 'Comparison').join('\n')
    assert.doesNotMatch(comparison, /\.txt/, 'no article figure inside our comparison table')
    const [header, , ...rows] = sectionLines(text, 'Their figures (from the articles), not measured here')
    assert.match(header ?? '', /^our strategy/)
    // Continuation lines of the wrapped setup column start with spaces.
    const strategies = rows.filter((line) => !line.startsWith(' ')).map((line) => cells(line)[0])
    assert.deepEqual(strategies, ['event-loop', 'libuv', 'libuv', 'libuv-128', 'spawn', 'piscina'])
    assert.ok(rows.some((line) => line.includes('login-storm-bcrypt-nestjs-k8s.txt') && line.includes('15,000') && line.includes('30,000')))
  })

  it('lists the warnings and keeps every line under 160 characters', () => {
    assert.match(text, /- cluster: the primary does not report event-loop delay/)
    for (const line of text.split('\n')) assert.ok(line.length < 160, `too long (${line.length}): ${line}`)
  })

  it('prints the machine and the load', () => {
    assert.match(text, /machine: +AMD EPYC 7B13, 2 cores, 24\.0 GiB/)
    assert.match(text, /software: +Node v20\.20\.2, linux x64, tollbooth 0\.1\.0/)
    assert.match(text, /stages: +0 → 100 VUs over 10 s, 100 VUs for 20 s/)
  })
})

describe('terminal report: run', () => {
  it('has a row per endpoint in the scenario\'s order, then the totals', () => {
    const result = runFixture()
    const [, , ...rows] = sectionLines(renderText(result), 'Requests by endpoint')
    const tableRows = rows.slice(0, rows.findIndex((row) => row.startsWith('errors:')))
    const names = tableRows.filter((row) => !row.startsWith('---')).map((row) => cells(row)[0])
    assert.deepEqual(names, ['POST /auth/register', 'POST /auth/login', 'POST /posts', 'all endpoints'])
    const total = tableRows.at(-1) ?? ''
    assert.equal(cells(total)[1], formatCount(result.runs[0]?.all.requests))
  })

  it('shows /healthz, the server signals and the generator', () => {
    const text = renderText(runFixture())
    assert.match(text, /\/healthz during the run: 145 probes: p50 [\d.]+ ms, p99 [\d.]+ ms/)
    assert.match(text, /mean CPU: +[\d.]+ cores/)
    assert.match(text, /hash queue: +peak \d+ waiting, 2 running/)
    assert.match(text, /load generator: 2 workers, 0\.31 cores/)
    assert.doesNotMatch(text, /SATURATED/)
  })

  it('shows the empty server\'s /healthz floor under the service\'s, when it was measured', () => {
    const result = runFixture()
    delete runAt(result, 0).healthzFloor
    assert.doesNotMatch(renderText(result), /empty server/, 'results from before the floor say nothing of it')
    runAt(result, 0).healthzFloor = { count: 140, meanMs: 2, p50Ms: 1.2, p90Ms: 3, p95Ms: 4, p99Ms: 7.5, maxMs: 9.9 }
    assert.match(renderText(result), /\/healthz during the run: 145 probes: .*\n {2}an empty server beside it, probed alike \(the machine's floor\): p50 1\.20 ms, p99 7\.50 ms, max 9\.90 ms/)
  })

  it('adds a table by phase when the scenario ran in phases', () => {
    const result = runFixture()
    const run = runAt(result, 0)
    result.scenario.phases = ['register', 'login, then post']
    run.seconds.forEach((sample) => { sample.phase = sample.t <= 15 ? 'register' : 'login, then post' })
    run.phases = { register: run.endpoints['POST /auth/register'] ?? run.all, 'login, then post': run.all }
    const text = renderText(result)
    assert.match(text, /^phases: +register → login, then post$/m)
    const [header, , ...rows] = sectionLines(text, 'Requests by phase')
    assert.match(header ?? '', /^phase +requests +ok +errors +req\/s/)
    assert.deepEqual(rows.map((row) => cells(row)[0]), ['register', 'login, then post'])
    assert.doesNotMatch(renderText(runFixture()), /Requests by phase/)
  })

  it('warns loudly when the load generator was saturated', () => {
    const result = runFixture()
    const run = runAt(result, 0)
    run.generator.saturated = true
    assert.match(renderText(result), /^!!! LOAD GENERATOR SATURATED: the generator, not the service, may have limited the load/m)
  })
})

describe('terminal report: knee', () => {
  it('has the step table and a line that names the knee and why the search stopped', () => {
    const result = kneeFixture()
    const text = renderText(result)
    const stepRows = text.split('\n').filter((line) => /^ +\d+ {2,}[\d,]+ {2,}/.test(line))
    assert.equal(stepRows.length, result.knee?.steps.length)
    assert.match(text, /^knee: 259\/s \(stopped because step 13 failed: achieved 257\/s < 271\/s; p99 1874 ms > 1000 ms\)$/m)
    assert.match(text, /^ +13 +285 .* failed: achieved 257\/s/m)
  })

  it('says so when even the first step failed', () => {
    const result: LabResult = kneeFixture()
    assert.ok(result.knee !== undefined)
    result.knee.kneePerSecond = null
    result.knee.stoppedBecause = 'step 1 failed'
    assert.match(renderText(result), /^knee: none, even the first step failed \(stopped because step 1 failed\)$/m)
  })
})
