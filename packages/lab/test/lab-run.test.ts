/**
 * Short labs against a real tollbooth (`run` and `knee`): one service, started as users start it,
 * on a real socket as the target of every test here; none depends on the others' accounts or
 * counters. The lab's other end-to-end files: lab-compare*.test.ts (services the lab starts itself)
 * and lab-cli.test.ts (the command line); they are apart so that they run in parallel.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { labKnee, labRun } from '../src/lab.js'
import { renderText, writeReports } from '../src/report/index.js'
import { labResultSchema, type LabResult } from '../src/result.js'
import { startTestService, type TestService } from './helpers/service.js'

const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-lab-e2e-'))
const quiet = { log: () => {} }

let service: TestService
before(async () => { service = await startTestService({ config: { labDiagnostics: true } }) })
after(async () => {
  await service.close()
  fs.rmSync(out, { recursive: true, force: true })
})

describe('the load lab against a real service', () => {
  it('run: a login storm, counted per second and per endpoint, with the service\'s signals and /healthz', async () => {
    const result = await labRun({ ...quiet, scenario: 'login-storm', target: service.url, load: { durationMs: 3000, vus: 4, accounts: 5 } })
    assert.equal(result.schema, labResultSchema)
    assert.equal(result.command, 'run')
    assert.equal(result.runs.length, 1)
    const run = result.runs[0] as LabResult['runs'][number]
    assert.equal(run.service.startedByLab, false)
    assert.equal(run.service.settings.hashThreads, '2', 'read from /metrics')
    assert.ok(['set', 'missing', 'not applicable'].includes(run.service.settings.mallocSettings ?? ''), `and whether glibc's malloc settings for hashing are set: ${run.service.settings.mallocSettings}`)
    const login = run.endpoints['POST /auth/login']
    assert.ok(login !== undefined && login.ok > 0, 'logins succeeded')
    assert.equal(login.requests, login.ok, 'and none failed')
    assert.equal(run.all.requests, run.seconds.reduce((sum, s) => sum + s.all.requests, 0))
    assert.ok(run.seconds.length >= 3)
    assert.ok((run.healthz?.count ?? 0) > 10, 'the /healthz probe ran through the storm')
    assert.ok((run.healthzFloor?.count ?? 0) > 10, 'and probed an empty server beside it alike')
    assert.deepEqual(run.summary.healthzFloor, run.healthzFloor)
    assert.ok(run.seconds.some((s) => s.healthzFloor !== null && s.healthzFloor !== undefined), 'the floor is kept by the second too')
    assert.ok(run.seconds.every((s) => s.generatorUtilisation !== undefined && s.generatorUtilisation >= 0 && s.generatorUtilisation <= 1), 'each second has its generator utilisation')
    assert.ok(run.seconds.some((s) => (s.generatorUtilisation ?? 0) > 0), 'and a generator that sent requests was busy some of the time')
    assert.ok(run.server.length >= 2 && run.server.some((s) => s.cpuCores !== null && s.hashQueued !== null), 'server signals were scraped')
    assert.ok(run.summary.achievedPerSecond > 0)
    assert.equal(run.summary.errorRate, 0)
    assert.deepEqual(result.references.map((r) => r.strategy), ['libuv', 'libuv-128', 'spawn', 'libuv'], 'the NestJS and pool-starvation articles\' figures ride along')
    assert.deepEqual(result.warnings.filter((w) => /threw|saturated/.test(w)), [])

    const written = await writeReports(path.join(out, 'run'), result)
    for (const name of ['result.json', 'report.html', 'seconds.csv']) assert.ok(written.some((file) => file.endsWith(name)), name)
    const reread = JSON.parse(fs.readFileSync(path.join(out, 'run', 'result.json'), 'utf8')) as LabResult
    assert.deepEqual(reread.runs[0]?.summary, run.summary)
  })

  it('run: users spread over loopback source addresses log in from them, and the report says so', async () => {
    const result = await labRun({ ...quiet, scenario: 'login-storm', target: service.url, load: { durationMs: 2000, vus: 4, accounts: 5, sourceAddresses: 4 } })
    assert.equal(result.load.sourceAddresses, 4)
    const login = result.runs[0]?.endpoints['POST /auth/login']
    assert.ok(login !== undefined && login.ok > 0 && login.requests === login.ok, 'the logins succeeded')
    // The service saw them come from 127.1.0.1 to 127.1.0.4: each login's session keeps its client's address.
    const db = new pg.Client({ connectionString: service.db.url })
    await db.connect()
    try {
      const { rows } = await db.query<{ address: string }>("SELECT DISTINCT address FROM sessions WHERE address LIKE '127.1.%' ORDER BY address")
      assert.deepEqual(rows.map((row) => row.address), ['127.1.0.1', '127.1.0.2', '127.1.0.3', '127.1.0.4'])
    } finally {
      await db.end()
    }
    assert.match(renderText(result), /users spread over 4\s+loopback source addresses/)
    // A target those addresses cannot reach is refused before any load.
    await assert.rejects(labRun({ ...quiet, scenario: 'login-storm', target: 'http://localhost:9', load: { durationMs: 1000, vus: 2, sourceAddresses: 2 } }), { code: 'CONFIG_INVALID', field: 'sourceAddresses' })
    // So is a service behind HAProxy, which connects to the replicas from its own address.
    await assert.rejects(labRun({ ...quiet, scenario: 'login-storm', replicas: { count: 2 }, load: { durationMs: 1000, vus: 2, sourceAddresses: 2 } }), { code: 'CONFIG_INVALID', field: 'sourceAddresses' })
  })

  it('run: login-burst sends every login at once from addresses of their own, and reads GET /me beside them', async () => {
    const result = await labRun({ ...quiet, scenario: 'login-burst', target: service.url, load: { vus: 21 } })
    assert.equal(result.load.sourceAddresses, 21, 'one address per user')
    const run = result.runs[0] as LabResult['runs'][number]
    const logins = run.endpoints['POST /auth/login']
    assert.equal(logins?.requests, 20, 'one login per user but the reader')
    // Unknown accounts: each login judged (401) or refused, never let in.
    assert.equal(logins.ok, 0)
    assert.equal(Object.entries(logins.errors.byStatus).filter(([status]) => !['401', '429', '503'].includes(status)).length, 0, JSON.stringify(logins.errors))
    assert.ok((run.endpoints['GET /me']?.ok ?? 0) >= 1, 'the reader read')
    assert.equal(run.endpoints['GET /healthz']?.requests, 21, 'each user opened its connection first')
    assert.deepEqual(result.warnings.filter((w) => /threw/.test(w)), [])
  })

  it('run: auth-path runs its three phases in turn on the diagnostic route', async () => {
    const result = await labRun({ ...quiet, scenario: 'auth-path', target: service.url, load: { durationMs: 1000, vus: 2, accounts: 3 } })
    const run = result.runs[0]
    assert.deepEqual(Object.keys(run?.phases ?? {}), ['noop', 'jwt-only', 'full'])
    for (const [phase, stats] of Object.entries(run?.phases ?? {})) assert.ok(stats.ok > 0 && stats.ok === stats.requests, `${phase}: ${stats.ok}/${stats.requests}`)
    assert.deepEqual(Object.keys(run?.endpoints ?? {}), ['POST /lab/login?hash=noop', 'POST /lab/login?hash=jwt-only', 'POST /lab/login?hash=full'])
    assert.deepEqual([...new Set(run?.seconds.map((s) => s.phase).filter((p) => p !== undefined))], ['noop', 'jwt-only', 'full'])
    // Each endpoint ran in its own phase: the report gives its rate over that phase, not the whole run.
    const text = renderText(result)
    const rate = (label: RegExp): string | undefined => text.split('\n').find((line) => label.test(line))?.trim().split(/\s{2,}/)[4]
    assert.equal(rate(/^POST \/lab\/login\?hash=noop /), rate(/^noop /))
  })

  it('run: an interruption (Ctrl-C) stops the load at once and still returns what was measured', async () => {
    // Ctrl-C once a second of load has ended with logins done: a state, not a guess at how long setup takes.
    const controller = new AbortController()
    const started = Date.now()
    const onSecond = (_label: string, sample: { achieved: number }): void => { if (sample.achieved > 0) controller.abort() }
    const result = await labRun({ ...quiet, scenario: 'login-storm', target: service.url, load: { durationMs: 60_000, vus: 3, accounts: 3 }, signal: controller.signal, onSecond })
    assert.ok(Date.now() - started < 20_000, 'well before the minute the load asked for')
    assert.ok(result.warnings.some((warning) => /interrupted/.test(warning)), result.warnings.join('; '))
    assert.ok((result.runs[0]?.all.ok ?? 0) > 0, 'the logins before the interruption are in the result')
  })

  it('knee: raises the rate step by step and reports the last one that held', async () => {
    const result = await labKnee({
      ...quiet,
      scenario: 'registration',
      target: service.url,
      load: {},
      criteria: { startRate: 5, stepFactor: 1, stepDurationMs: 1000, maxSteps: 3, p99LimitMs: 10_000, throughputMargin: 0.5 },
    })
    assert.deepEqual(result.knee?.steps.map((s) => s.offeredPerSecond), [5, 10, 20])
    assert.ok(result.knee?.steps.every((s) => s.held), JSON.stringify(result.knee?.steps.map((s) => s.failedBecause)))
    assert.equal(result.knee?.kneePerSecond, 20)
    assert.match(result.knee?.stoppedBecause ?? '', /reached 3 steps/)
    assert.ok(result.load.model === 'open' && result.load.startRate === 5, 'the load starts at the first step')
    assert.deepEqual(result.load.stages, [{ durationMs: 3000, target: 20 }], 'and climbs to the last in the steps\' time')
    assert.equal(result.runs[0]?.endpoints['POST /auth/register']?.ok, 5 + 10 + 20)
  })

  it('knee: stops at the first step that breaks a limit, with no knee when it is the first', async () => {
    const result = await labKnee({ ...quiet, scenario: 'registration', target: service.url, load: {}, criteria: { startRate: 5, stepDurationMs: 1000, maxSteps: 5, p99LimitMs: 0.001 } })
    assert.equal(result.knee?.steps.length, 1)
    assert.equal(result.knee?.kneePerSecond, null)
    assert.match(result.knee?.stoppedBecause ?? '', /step 1 \(5\/s\) did not hold: p99/)
  })
})
