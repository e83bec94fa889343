/**
 * A run's summary counts what the service did during the schedule: an iteration still in flight
 * when a segment's schedule ends finishes in the drain, and is counted apart rather than credited
 * to the schedule's seconds, which do not include the drains either. A real HTTP server on a
 * socket answers every request after a fixed delay, so each virtual user has exactly one
 * iteration in flight when a schedule ends.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { LoadSpec } from '../../src/result.js'
import { runLoad } from '../../src/load/runner.js'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-run-summary-'))
const scenarioFile = path.join(dir, 'slow.mjs')
fs.writeFileSync(scenarioFile, `export default {
  name: 'slow',
  endpoints: ['GET /slow'],
  async iteration (vu) {
    return (await vu.request('GET /slow', { method: 'GET', path: '/slow' })).ok
  },
}
`)

const answerAfterMs = 300
const vus = 4
const durationMs = 2000

let server: http.Server
let url = ''
before(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('')
      return
    }
    setTimeout(() => { res.writeHead(200, { 'content-type': 'application/json' }).end('{}') }, answerAfterMs)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  fs.rmSync(dir, { recursive: true, force: true })
})

describe('a run\'s summary', () => {
  it('credits the schedules\' seconds with the iterations that ended in them, and counts the drains apart', async () => {
    // Two phases, each 2 s of 4 users on two generator threads: two schedules, two drains.
    const load: LoadSpec = {
      model: 'closed',
      startVus: vus,
      stages: [{ durationMs, target: vus }],
      thinkTimeMs: 0,
      honourRetryAfter: true,
      requestTimeoutMs: 10_000,
      healthzProbeRate: 0,
      workers: 2,
      accounts: 0,
    }
    const { run } = await runLoad({
      label: 'slow',
      url,
      metricsUrl: url,
      service: { url, startedByLab: false, strategy: null, version: null, settings: {} },
      pid: undefined,
      load,
      scenario: { file: scenarioFile },
      data: undefined,
      runId: 'summary',
      endpointOrder: ['GET /slow'],
    }, async (segment) => {
      await segment('first', load)
      await segment('second', load)
    })

    const achieved = run.seconds.reduce((sum, second) => sum + second.achieved, 0)
    assert.equal(run.all.requests, achieved, 'every request succeeded and is in the seconds')
    // No think time and a 300 ms answer: every user is inside an iteration when each schedule ends.
    assert.equal(run.summary.achievedAfterEnd, 2 * vus, 'one iteration per user and phase ended in a drain')
    assert.equal(run.summary.durationSeconds, 2 * durationMs / 1000, 'the two schedules, not the drains between and after them')
    const inWindow = achieved - 2 * vus
    assert.equal(run.summary.achievedPerSecond, Math.round((inWindow / run.summary.durationSeconds) * 100) / 100)
    // At most one iteration per user every 300 ms fits in a schedule.
    assert.ok(inWindow <= 2 * vus * Math.floor(durationMs / answerAfterMs), `${inWindow} iterations in the schedules`)
  })
})
