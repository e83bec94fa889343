import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { csvField, renderCsv } from '../../src/report/csv.js'
import { compareFixture, kneeFixture, runAt, runFixture } from '../fixtures.js'

/** A strict RFC 4180 reader: CRLF records, quoted fields with doubled quotes. */
function parseCsv (text: string): string[][] {
  const records: string[][] = []
  let record: string[] = []
  let field = ''
  let index = 0
  while (index < text.length) {
    const char = text[index]
    if (char === '"' && field === '') {
      const close = (from: number): number => {
        for (let at = from; at < text.length; at++) {
          if (text[at] === '"') {
            if (text[at + 1] === '"') at++
            else return at
          }
        }
        throw new Error('unterminated quoted field')
      }
      const end = close(index + 1)
      field = text.slice(index + 1, end).replace(/""/g, '"')
      index = end + 1
      assert.ok([',', '\r', undefined].includes(text[index]), `junk after a quoted field at ${index}`)
      continue
    }
    if (char === ',') {
      record.push(field)
      field = ''
    } else if (char === '\r') {
      assert.equal(text[index + 1], '\n', 'records end with CRLF')
      record.push(field)
      records.push(record)
      record = []
      field = ''
      index++
    } else {
      assert.notEqual(char, '\n', 'a bare LF')
      field += char
    }
    index++
  }
  assert.equal(field + record.join(''), '', 'the last record ends with CRLF')
  return records
}

/** Rows as objects keyed by the header. */
function table (text: string | undefined): Array<Record<string, string>> {
  assert.ok(text !== undefined, 'file missing')
  const [header, ...rows] = parseCsv(text)
  assert.ok(header !== undefined)
  for (const row of rows) assert.equal(row.length, header.length, 'every row as wide as the header')
  return rows.map((row) => Object.fromEntries(header.map((name, index) => [name, row[index] ?? ''])))
}

describe('CSV files', () => {
  it('writes the files each command calls for', () => {
    assert.deepEqual(Object.keys(renderCsv(runFixture())), ['seconds.csv', 'endpoints.csv', 'server.csv'])
    assert.deepEqual(Object.keys(renderCsv(kneeFixture())), ['seconds.csv', 'endpoints.csv', 'server.csv', 'knee.csv', 'references.csv'])
    assert.deepEqual(Object.keys(renderCsv(compareFixture())), ['seconds.csv', 'endpoints.csv', 'server.csv', 'comparison.csv', 'references.csv'])
  })

  it('has one row per second and per server sample of every run', () => {
    const result = compareFixture()
    const files = renderCsv(result)
    const seconds = table(files['seconds.csv'])
    const server = table(files['server.csv'])
    assert.equal(seconds.length, result.runs.reduce((sum, run) => sum + run.seconds.length, 0))
    assert.equal(server.length, result.runs.reduce((sum, run) => sum + run.server.length, 0))
    assert.deepEqual([...new Set(seconds.map((row) => row.run))], result.runs.map((run) => run.label))
    const first = result.runs[0]?.seconds[4]
    const row = seconds[4]
    assert.ok(first !== undefined && row !== undefined)
    assert.deepEqual(
      [row.t, row.offered, row.achieved, row.requests, row.ok, row.p99Ms, row.timeouts, row.generatorUtilisation],
      [first.t, first.offered, first.achieved, first.all.requests, first.all.ok, first.all.latency.p99Ms, first.all.errors.timeouts, first.generatorUtilisation].map(String)
    )
  })

  it('has a column for every ServerSample field', () => {
    const result = runFixture()
    const [header] = parseCsv(renderCsv(result)['server.csv'] ?? '')
    const sample = result.runs[0]?.server[0]
    assert.ok(sample !== undefined)
    assert.deepEqual(header, ['run', ...Object.keys(sample)])
  })

  it('leaves an unmeasured value empty, never 0', () => {
    const files = renderCsv(compareFixture())
    const seconds = table(files['seconds.csv'])
    assert.equal(seconds[0]?.healthzP99Ms, '', 'no /healthz probe ended in the first second')
    const cluster = table(files['server.csv']).filter((row) => row.run === 'cluster')
    assert.ok(cluster.length > 0 && cluster.every((row) => row.eventLoopDelayP99Ms === '' && row.libuvCanaryMs === ''))
    const comparison = table(files['comparison.csv']).find((row) => row.run === 'cluster')
    assert.equal(comparison?.eventLoopDelayP99MaxMs, '')
    assert.notEqual(comparison?.cpuCoresMean, '')
  })

  it('quotes a label with a comma and a quote, and reads back the same', () => {
    const result = compareFixture()
    const run = runAt(result, 2)
    run.label = 'libuv, "128 threads"'
    const files = renderCsv(result)
    assert.match(files['comparison.csv'] ?? '', /\r\n"libuv, ""128 threads""",libuv-128,/)
    assert.deepEqual(table(files['comparison.csv']).map((row) => row.run), result.runs.map((one) => one.label))
    assert.equal(table(files['seconds.csv']).filter((row) => row.run === run.label).length, run.seconds.length)
    assert.deepEqual(['plain', 'a,b', 'say "hi"', 'two\r\nlines', null, undefined, 1.5, Number.NaN, true].map(csvField),
      ['plain', '"a,b"', '"say ""hi"""', '"two\r\nlines"', '', '', '1.5', '', 'true'])
  })

  it('writes one knee row per step, and the comparison in the order the strategies ran', () => {
    const knee = kneeFixture()
    const steps = table(renderCsv(knee)['knee.csv'])
    assert.equal(steps.length, knee.knee?.steps.length)
    assert.deepEqual(steps.at(-1), {
      ...steps.at(-1),
      step: '13',
      held: 'false',
      failedBecause: 'achieved 257/s < 271/s; p99 1874 ms > 1000 ms',
    })
    const compare = compareFixture()
    const rows = table(renderCsv(compare)['comparison.csv'])
    assert.deepEqual(rows.map((row) => row.run), compare.runs.map((run) => run.label))
    assert.equal(rows[6]?.overloaded, String(compare.runs[6]?.summary.errors.overloaded))
    assert.equal(rows[6]?.okLatencyP95Ms, String(compare.runs[6]?.summary.okLatency.p95Ms), 'the 2xx latency has columns of its own')
  })

  it('writes each endpoint of each run and the run as a whole', () => {
    const result = runFixture()
    const rows = table(renderCsv(result)['endpoints.csv'])
    assert.deepEqual(rows.map((row) => row.endpoint), ['POST /auth/register', 'POST /auth/login', 'POST /posts', 'all endpoints'])
    assert.equal(rows[3]?.requests, String(result.runs[0]?.all.requests))
    assert.equal(rows[3]?.okLatencyP99Ms, String(result.runs[0]?.all.okLatency.p99Ms))
    assert.match(rows[0]?.byStatus ?? '', /^503=\d+$/)
  })

  it('keeps the articles\' figures apart, in references.csv', () => {
    const rows = table(renderCsv(compareFixture())['references.csv'])
    assert.equal(rows.length, 6)
    assert.deepEqual(rows[1], { ...rows[1], source: 'login-storm-bcrypt-nestjs-k8s.txt', strategy: 'libuv', p95Ms: '15000', p99Ms: '30000', requestsPerSecond: '' })
  })
})
