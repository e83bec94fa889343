/**
 * The passkey scenarios end to end: `lab compare` of passkey-storm beside login-storm on services
 * the lab starts (one database), then mixed-storm and passkey-storm again on that database (its
 * accounts reused, each given a new passkey). The lab signs every assertion with its own software
 * authenticator, in its generator threads.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { labCompare, labRun } from '../src/lab.js'
import { renderText } from '../src/report/index.js'
import { serviceCpuMsPerAchieved, type RunResult } from '../src/result.js'
import { createTestDatabase, type TestDatabase } from './helpers/database.js'

const quiet = { log: () => {} }
const cheapHashes = { TOLLBOOTH_BCRYPT_COST: '4', TOLLBOOTH_HASH_THREADS: '1' }
const passkeyEndpoints = ['POST /auth/passkey/options', 'POST /auth/passkey/verify']

function assertAllOk (run: RunResult, endpoint: string): void {
  const stats = run.endpoints[endpoint]
  assert.ok(stats !== undefined && stats.ok > 0, `${run.label}: ${endpoint} answered`)
  assert.equal(stats.ok, stats.requests, `${run.label}: every ${endpoint} succeeded: ${JSON.stringify(stats.errors)}`)
}

describe('the passkey storms against services the lab starts', () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase() })
  after(async () => { await database.drop() })

  it('compare --scenario passkey-storm,login-storm: one run per scenario on tollbooth, each with its own endpoints, CPU per login and /healthz', async () => {
    const result = await labCompare({ ...quiet, scenario: 'passkey-storm', scenarios: ['passkey-storm', 'login-storm'], databaseUrl: database.url, serviceEnv: cheapHashes, load: { durationMs: 2000, vus: 3, accounts: 4 } })
    assert.deepEqual(result.runs.map((run) => [run.label, run.scenario, run.service.strategy]), [['passkey-storm', 'passkey-storm', 'tollbooth'], ['login-storm', 'login-storm', 'tollbooth']])
    assert.deepEqual(result.scenarios?.map((scenario) => scenario.name), ['passkey-storm', 'login-storm'])
    assert.deepEqual(result.warnings.filter((w) => /did not start|threw|saturated/.test(w)), [])
    const [passkey, password] = result.runs as [RunResult, RunResult]
    assert.deepEqual(Object.keys(passkey.endpoints), passkeyEndpoints, 'a passkey sign-in: options, then the assertion; no password login')
    for (const endpoint of passkeyEndpoints) assertAllOk(passkey, endpoint)
    assertAllOk(password, 'POST /auth/login')
    for (const run of result.runs) {
      assert.equal(run.load?.accounts, 4, 'each run keeps its load')
      assert.ok(run.summary.achievedPerSecond > 0)
      assert.ok((serviceCpuMsPerAchieved(run.summary) ?? 0) > 0, `${run.label}: the service's CPU per login, from its process tree`)
      assert.ok((run.summary.healthz?.count ?? 0) > 0, `${run.label}: /healthz probed`)
      assert.ok(run.generator.cpuCores > 0, `${run.label}: the lab's own CPU`)
    }
    const text = renderText(result)
    assert.match(text, /CPU ms\/ok/)
    assert.match(text, /Endpoints: passkey-storm/)
  })

  it('mixed-storm: the stated share of users signs in with passkeys, the others with passwords, on accounts from an earlier run', async () => {
    const result = await labRun({ ...quiet, scenario: 'mixed-storm', databaseUrl: database.url, serviceEnv: cheapHashes, load: { durationMs: 2000, vus: 4, accounts: 4, passkeyShare: 0.5 } })
    const run = result.runs[0] as RunResult
    assert.equal(result.load.passkeyShare, 0.5)
    for (const endpoint of ['POST /auth/login', ...passkeyEndpoints]) assertAllOk(run, endpoint)
    // passkey-storm again on the same database: its accounts exist, each gets a new passkey that signs in.
    const again = await labRun({ ...quiet, scenario: 'passkey-storm', databaseUrl: database.url, serviceEnv: cheapHashes, load: { durationMs: 1000, vus: 2, accounts: 4 } })
    for (const endpoint of passkeyEndpoints) assertAllOk(again.runs[0] as RunResult, endpoint)
  })
})
