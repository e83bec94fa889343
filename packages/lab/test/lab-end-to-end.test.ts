/**
 * Short labs against a real tollbooth: in-process services on real sockets as
 * targets, and services the lab starts itself (bin/tollbooth.js) on a real
 * PostgreSQL for the comparison; then the command line, end to end.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { labCompare, labKnee, labRun } from '../src/lab.js'
import { renderText, writeReports } from '../src/report/index.js'
import { labResultSchema, type LabResult } from '../src/result.js'
import { tollboothBin } from 'tollbooth/launcher'
import { createTestDatabase, type TestDatabase } from './helpers/database.js'
import { startTestService, type TestService } from './helpers/service.js'

const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-lab-e2e-'))
const quiet = { log: () => {} }

// One in-process service for every test that needs a target (the runs, the knee and the command
// line): none of them depends on the others' accounts or counters.
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
    const login = run.endpoints['POST /auth/login']
    assert.ok(login !== undefined && login.ok > 0, 'logins succeeded')
    assert.equal(login.requests, login.ok, 'and none failed')
    assert.equal(run.all.requests, run.seconds.reduce((sum, s) => sum + s.all.requests, 0))
    assert.ok(run.seconds.length >= 3)
    assert.ok((run.healthz?.count ?? 0) > 10, 'the /healthz probe ran through the storm')
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

describe('lab compare: the service started once per strategy on one database', () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase() })
  after(async () => { await database.drop() })

  it('measures each strategy with the same load, and reads each one\'s whole process tree', async () => {
    const result = await labCompare({
      ...quiet,
      scenario: 'login-storm',
      strategies: ['event-loop', 'tollbooth'],
      databaseUrl: database.url,
      serviceEnv: { TOLLBOOTH_BCRYPT_COST: '4', TOLLBOOTH_HASH_THREADS: '1' },
      load: { durationMs: 1000, vus: 2, accounts: 3 },
    })
    assert.deepEqual(result.runs.map((run) => run.label), ['event-loop', 'tollbooth'])
    assert.deepEqual(result.warnings.filter((w) => /did not start|threw/.test(w)), [])
    for (const run of result.runs) {
      assert.equal(run.service.startedByLab, true)
      assert.equal(run.service.settings.TOLLBOOTH_HASH_STRATEGY, run.label)
      assert.equal(run.service.settings.TOLLBOOTH_HASH_ALGORITHM, 'bcrypt', 'the seeds\' algorithm by default')
      assert.ok(run.all.ok > 0 && run.all.ok === run.all.requests, `${run.label}: ${run.all.ok}/${run.all.requests}`)
      assert.ok(run.server.some((s) => s.processTreeCpuCores !== null && s.processTreeRssBytes !== null), `${run.label}: /proc read`)
      assert.ok(run.summary.peakRssBytes !== null && run.summary.peakRssBytes > 10_000_000, `${run.label}: RSS`)
    }
  })
})

describe('lab compare with polite and naive clients', () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase() })
  after(async () => { await database.drop() })

  it('measures each strategy once per kind of client, in one run', async () => {
    const result = await labCompare({
      ...quiet,
      scenario: 'login-storm',
      strategies: ['tollbooth'],
      clients: ['polite', 'naive'],
      databaseUrl: database.url,
      serviceEnv: { TOLLBOOTH_BCRYPT_COST: '4', TOLLBOOTH_HASH_THREADS: '1' },
      load: { durationMs: 1000, vus: 2, accounts: 2 },
    })
    assert.deepEqual(result.runs.map((run) => [run.label, run.clients]), [['tollbooth polite', 'polite'], ['tollbooth naive', 'naive']])
    assert.equal(result.load.politeAndNaive, true)
    for (const run of result.runs) assert.ok(run.all.ok > 0, `${run.label}: ${run.all.ok}/${run.all.requests}`)
    assert.match(renderText(result), /polite clients \(Retry-After honoured\) and naive ones/)
  })
})

describe('tollbooth lab on the command line', () => {
  const cli = async (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> => {
    const child = spawn(process.execPath, [tollboothBin, 'lab', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    return { code, stdout, stderr }
  }

  it('runs, prints the table and writes the reports; `lab report` renders them again from result.json', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-lab-cli-'))
    try {
      const { code, stdout, stderr } = await cli(['run', '--scenario', 'login-storm', '--target', service.url, '--duration', '1s', '--vus', '2', '--accounts', '2', '--out', dir, '--quiet'])
      assert.equal(code, 0, stderr)
      assert.match(stdout, /POST \/auth\/login/)
      assert.match(stdout, /wrote /)
      for (const name of ['result.json', 'seconds.csv', 'endpoints.csv', 'server.csv', 'report.html']) assert.ok(fs.existsSync(path.join(dir, name)), name)
      const result = JSON.parse(fs.readFileSync(path.join(dir, 'result.json'), 'utf8')) as LabResult
      assert.match(result.commandLine, /lab run --scenario login-storm/)

      const again = path.join(dir, 'again')
      const rendered = await cli(['report', path.join(dir, 'result.json'), '--out', again])
      assert.equal(rendered.code, 0, rendered.stderr)
      assert.equal(fs.readFileSync(path.join(again, 'seconds.csv'), 'utf8'), fs.readFileSync(path.join(dir, 'seconds.csv'), 'utf8'))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses bad flags with exit code 2 and a message naming them', async () => {
    const unknown = await cli(['run', '--scenario', 'nope'])
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /unknown scenario "nope"/)
    const both = await cli(['run', '--scenario', 'login-storm', '--target', service.url, '--vus', '2', '--rate', '5'])
    assert.equal(both.code, 2)
    assert.match(both.stderr, /not both/)
    const duration = await cli(['knee', '--scenario', 'registration', '--step-duration', 'soon'])
    assert.equal(duration.code, 2)
    assert.match(duration.stderr, /--step-duration/)
  })
})
