/**
 * oidc-storm end to end, on services the lab starts (one database): the code flow with PKCE walked
 * over HTTP to its tokens beside login-storm in one compare, the lab's client registered again on
 * a second run, and a storm the hash pool cannot serve in time refused 503 + Retry-After at the
 * sign-in form, never left hanging.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { labCompare, labRun } from '../src/lab.js'
import type { RunResult } from '../src/result.js'
import { createTestDatabase, type TestDatabase } from './helpers/database.js'

const quiet = { log: () => {} }
const cheapHashes = { TOLLBOOTH_BCRYPT_COST: '4', TOLLBOOTH_HASH_THREADS: '1' }
const flowEndpoints = ['GET /oidc/auth', 'GET /oidc/interaction/:uid', 'POST /oidc/interaction/:uid/login', 'GET /oidc/auth/:uid', 'POST /oidc/token']
const signIn = 'POST /oidc/interaction/:uid/login'

describe('oidc-storm against services the lab starts', () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase() })
  after(async () => { await database.drop() })

  it('compare --scenario login-storm,oidc-storm: each login walks the code flow to its tokens, on a service with the same settings as login-storm\'s', async () => {
    const result = await labCompare({ ...quiet, scenario: 'login-storm', scenarios: ['login-storm', 'oidc-storm'], databaseUrl: database.url, serviceEnv: cheapHashes, load: { durationMs: 2000, vus: 3, accounts: 4 } })
    assert.deepEqual(result.runs.map((run) => run.label), ['login-storm', 'oidc-storm'])
    assert.deepEqual(result.warnings.filter((w) => /did not start|threw|saturated/.test(w)), [])
    const [password, oidc] = result.runs as [RunResult, RunResult]
    assert.deepEqual(password.service.settings, oidc.service.settings, 'both services ran with the same settings')
    assert.equal(oidc.service.settings.TOLLBOOTH_OIDC, 'true')
    assert.deepEqual(Object.keys(oidc.endpoints), flowEndpoints, 'a first-party client: no consent asked')
    for (const endpoint of flowEndpoints) {
      const stats = oidc.endpoints[endpoint]
      assert.ok(stats !== undefined && stats.ok > 0 && stats.ok === stats.requests, `every ${endpoint} succeeded: ${JSON.stringify(stats?.errors)}`)
    }
    const tokens = oidc.endpoints['POST /oidc/token']?.ok ?? 0
    const achieved = oidc.seconds.reduce((sum, second) => sum + second.achieved, 0)
    assert.ok(achieved > 0 && achieved <= tokens, `a login counted only when its tokens came: ${achieved} logins, ${tokens} token answers`)
    assert.equal(oidc.summary.errorRate, 0, 'the redirects of the walk count as successes')
    assert.ok((password.endpoints['POST /auth/login']?.ok ?? 0) > 0)

    // Again on the same database: the accounts are kept, the lab's client registered afresh (its secret was shown once).
    const again = await labRun({ ...quiet, scenario: 'oidc-storm', databaseUrl: database.url, serviceEnv: cheapHashes, load: { durationMs: 1000, vus: 2, accounts: 4 } })
    const tokensAgain = again.runs[0]?.endpoints['POST /oidc/token']
    assert.ok(tokensAgain !== undefined && tokensAgain.ok > 0 && tokensAgain.ok === tokensAgain.requests)
  })

  it('a storm past the hash pool: the sign-in form answers 503 with Retry-After, no request hangs, a refused form is sent again', async () => {
    // One hash thread at bcrypt cost 10 and a 300 ms login deadline: a queue of a few logins at most, for 24 naive users.
    const result = await labRun({
      ...quiet,
      scenario: 'oidc-storm',
      databaseUrl: database.url,
      serviceEnv: { TOLLBOOTH_BCRYPT_COST: '10', TOLLBOOTH_HASH_THREADS: '1', TOLLBOOTH_LOGIN_DEADLINE_MS: '300' },
      load: { durationMs: 3000, vus: 24, accounts: 8, honourRetryAfter: false, requestTimeoutMs: 20_000 },
    })
    const run = result.runs[0] as RunResult
    const stats = run.endpoints[signIn]
    assert.ok(stats !== undefined, 'the sign-in form was posted')
    const refused = stats.errors.byStatus['503'] ?? 0
    assert.ok(stats.errors.overloaded > 0, `the crowd was refused busy: ${JSON.stringify(stats.errors)}`)
    assert.equal(stats.errors.overloaded, refused, 'every 503 carried Retry-After')
    assert.equal(run.summary.errors.timeouts, 0, 'no request was left hanging')
    assert.ok((stats.refusedLatency?.count ?? 0) > 0, 'the refusals were timed')
    // Whatever got through went on to its tokens (on a machine busy enough to starve the hash thread, none may).
    const tokens = run.endpoints['POST /oidc/token']
    assert.equal(tokens?.ok ?? 0, tokens?.requests ?? 0, `every code was exchanged: ${JSON.stringify(tokens?.errors)}`)
    // A refused sign-in is sent again on its own form: the flow is not begun anew for it.
    const begun = run.endpoints['GET /oidc/auth']?.requests ?? 0
    assert.ok(stats.requests > begun, `${stats.requests} sign-in posts for ${begun} flows begun`)
  })
})
