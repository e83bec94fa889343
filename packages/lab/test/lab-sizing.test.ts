/**
 * `lab sizing` end to end at a tiny scale (steps of a second, two multiples): against a real
 * tollbooth as a target, its knee, its curves with naive and polite clients, the database's WAL
 * and CPU per login, and the report in headless Chromium (every chart drawn, the sizing table
 * there, no request but the page); and with services the lab starts itself, alone and behind
 * HAProxy, on a database that counts its statements. Generous criteria: the knees must be found
 * on a busy machine, not be fast.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { labSizing, type SizingOptions } from '../src/lab.js'
import { renderText, writeReports } from '../src/report/index.js'
import type { LabResult, SizingFlow } from '../src/result.js'
import { launchChromium, openReport, type Chromium } from './helpers/chromium.js'
import { startTestService, type TestService } from './helpers/service.js'

const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-lab-sizing-'))
const tiny: Omit<SizingOptions, 'load'> = {
  log: () => {},
  multiples: [1, 2],
  estimateDurationMs: 3000,
  patienceMs: 2000,
  cheapP99LimitMs: 5000,
  peak: { perSecond: 500, p99Ms: 10_000 },
  criteria: { stepDurationMs: 1000, maxSteps: 3, throughputMargin: 0.5, errorRateLimit: 0.5 },
}

let service: TestService
let browser: Chromium
before(async () => {
  service = await startTestService()
  browser = await launchChromium()
})
after(async () => {
  await browser.close()
  await service.close()
  fs.rmSync(out, { recursive: true, force: true })
})

function assertFlowMeasured (flow: SizingFlow | undefined, endpoint: string): asserts flow is SizingFlow {
  assert.ok(flow !== undefined, `${endpoint} measured`)
  assert.equal(flow.endpoint, endpoint)
  assert.ok(flow.estimate.achievedPerSecond > 0, 'the closed-loop estimate served')
  assert.ok(flow.knee.steps.length >= 1 && flow.knee.kneePerSecond !== null, `a knee found: ${flow.knee.stoppedBecause}`)
  assert.ok(flow.knee.steps.every((step) => step.offeredPerSecond >= 1))
  // Naive then polite, each at 1x and 2x the knee.
  assert.deepEqual(flow.curve.map((step) => `${step.clients} ${step.multiple}`), ['naive 1', 'naive 2', 'polite 1', 'polite 2'])
  for (const step of flow.curve) {
    assert.ok(Math.abs(step.offeredPerSecond - (flow.knee.kneePerSecond ?? 0) * step.multiple) < 0.02, 'offered at the multiple of the knee')
    assert.ok(step.goodputPerSecond >= 0 && step.goodputPerSecond <= step.offeredPerSecond * 1.5, `${step.clients} ${step.multiple}x: goodput ${step.goodputPerSecond}/s`)
    assert.ok(step.attemptsPerArrival !== null && step.attemptsPerArrival >= 1)
    assert.ok(step.failedArrivals >= 0 && step.failedArrivals <= 1 && step.shedRate >= 0 && step.shedRate <= 1)
    assert.ok(step.healthz !== null && step.healthz.count > 0, '/healthz probed during the step')
    assert.ok(step.labCpuCores > 0, 'the generator\'s CPU is kept')
  }
  // On a busy machine a polite step of a second may end before its retries do; each kind is served somewhere.
  for (const kind of ['naive', 'polite']) {
    assert.ok(flow.curve.some((step) => step.clients === kind && step.goodputPerSecond > 0 && step.okLatency.count > 0), `${kind} clients served`)
  }
}

describe('lab sizing', () => {
  it('against a target: knees, curves, the database per login, and a report that renders in Chromium', async () => {
    const result = await labSizing({ ...tiny, target: service.url, databaseUrl: service.db.url, load: { accounts: 5 } })
    assert.equal(result.command, 'sizing')
    const sizing = result.sizing
    assert.ok(sizing !== undefined)
    assert.deepEqual(sizing.deployments.map((deployment) => deployment.kind), ['target'])
    const [login, me] = sizing.deployments[0]?.flows ?? []
    assertFlowMeasured(login, 'POST /auth/login')
    assertFlowMeasured(me, 'GET /me')
    assert.deepEqual([login.run, me.run], [0, 1], 'each flow\'s run is kept')
    assert.equal(result.runs.length, 2)
    // The test's PostgreSQL runs here but without pg_stat_statements: WAL and CPU, no statement count, and it says so.
    assert.ok(login.database !== null && login.database.operations > 0)
    assert.ok(login.database.walBytes > 0, 'a login writes WAL (its session)')
    assert.ok(login.database.cpuSeconds !== null && login.database.cpuSeconds > 0, 'PostgreSQL\'s processes are on this machine')
    assert.equal(login.database.statements, null)
    assert.match(login.databaseNote ?? '', /pg_stat_statements/)

    const text = renderText(result)
    for (const heading of ['Knees', 'Overload curve: target, logins', 'Overload curve: target, GET /me', 'The shared database', 'Sizing']) assert.ok(text.includes(`\n${heading}\n`), heading)
    assert.match(text, /For a peak of 500 logins\/s/)
    assert.match(text, /TLS: +nowhere/)

    const dir = path.join(out, 'target')
    await writeReports(dir, result)
    const activity = await openReport(browser, path.join(dir, 'report.html'))
    const page = await activity.page.evaluate(`({
      h2: [...document.querySelectorAll('h2')].map((heading) => heading.textContent),
      drawn: Number(document.body.dataset.chartsDrawn),
      failed: Number(document.body.dataset.chartsFailed),
      kinds: [...document.querySelectorAll('canvas')].map((canvas) => canvas.dataset.chart),
      blank: [...document.querySelectorAll('canvas')].filter((canvas) => {
        const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height)
        let ink = 0
        for (let alpha = 3; alpha < data.length; alpha += 4) if (data[alpha] !== 0) ink++
        return ink < 2000
      }).map((canvas) => canvas.id),
      replicaRows: [...document.querySelectorAll('#sizing table tbody tr')].length,
    })`) as { h2: string[], drawn: number, failed: number, kinds: string[], blank: string[], replicaRows: number }
    await activity.page.close()
    assert.deepEqual(activity.pageErrors, [])
    assert.deepEqual(activity.consoleErrors, [])
    assert.deepEqual(activity.requests, [activity.url], 'no request but the page itself')
    assert.deepEqual(page.h2, ['Sizing', 'Knees', 'Overload curves', 'The shared database', 'Each flow over time', 'Services'])
    assert.equal(page.failed, 0)
    assert.equal(page.drawn, page.kinds.length)
    assert.equal(page.kinds.filter((kind) => kind === 'sizing-goodput').length, 2, 'a goodput curve per flow')
    assert.equal(page.kinds.filter((kind) => kind === 'sizing-latency').length, 2, 'a latency curve per flow')
    assert.deepEqual(page.blank, [], 'every chart drew')
    assert.ok(login.serviceCpuCoresAtKnee !== null && login.serviceCpuCoresAtKnee > 0, 'the service\'s CPU at the knee was scraped')
    assert.equal(page.replicaRows, 4, 'a row per replica size (1, 2, 4, 8 CPUs)')
  })

  it('with services it starts: alone and behind HAProxy, on a database that counts the statements of a login', async () => {
    const result: LabResult = await labSizing({
      ...tiny,
      flows: ['login'],
      clients: ['naive'],
      serviceEnv: { TOLLBOOTH_BCRYPT_COST: '4', TOLLBOOTH_HASH_THREADS: '2', TOLLBOOTH_MAX_EVENT_LOOP_DELAY_MS: '0' },
      load: { accounts: 5 },
    })
    const sizing = result.sizing
    assert.ok(sizing !== undefined)
    assert.deepEqual(sizing.deployments.map((deployment) => deployment.kind), ['alone', 'haproxy'], result.warnings.join('; '))
    assert.match(sizing.hashParameters, /^bcrypt: cost 4$/)
    assert.match(sizing.deployments[1]?.description ?? '', /behind HAProxy/)
    for (const deployment of sizing.deployments) {
      const login = deployment.flows[0]
      assert.ok(login?.knee.kneePerSecond != null, `${deployment.kind}: ${login?.knee.stoppedBecause ?? 'no flow'}`)
      assert.deepEqual(login.curve.map((step) => step.clients), ['naive', 'naive'])
      // A login runs a few statements (lookup, claim, session and outcome): whole ones, never none.
      assert.ok(login.database !== null && login.database.statements !== null && login.database.statements >= 2 && login.database.statements < 20, `${deployment.kind}: ${JSON.stringify(login.database)}`)
      assert.ok(login.database.walBytes > 0 && (login.database.cpuSeconds ?? 0) > 0)
    }
    assert.equal(result.runs.length, 2)
  })
})
