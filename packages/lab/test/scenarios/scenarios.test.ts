import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { builtInScenarios, loadScenario, scenarioRef } from '../../src/scenarios/index.js'
import { declarativeScenario } from '../../src/scenarios/declarative.js'
import type { LabRequest, LabResponse } from '../../src/http/index.js'
import type { VirtualUser } from '../../src/scenarios/index.js'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-scenarios-'))
after(() => { fs.rmSync(dir, { recursive: true, force: true }) })

/** A virtual user that records requests and answers from a script (no network: scenario logic only). */
function scriptedUser (answers: (request: LabRequest) => Partial<LabResponse>): VirtualUser & { sent: Array<{ endpoint: string, request: LabRequest }> } {
  const sent: Array<{ endpoint: string, request: LabRequest }> = []
  let calls = 0
  return {
    id: 3,
    iteration: 0,
    state: {},
    phase: undefined,
    sent,
    unique: () => `u${++calls}`,
    async request (endpoint, request) {
      sent.push({ endpoint, request })
      return { status: 200, failure: null, ok: true, body: undefined, retryAfterSeconds: null, detail: null, ...answers(request) }
    },
  }
}

describe('scenarios', () => {
  it('has the ten built-ins, each naming its endpoints', () => {
    assert.deepEqual(Object.keys(builtInScenarios), ['login-storm', 'devnest', 'registration', 'stress', 'auth-path', 'me-crowd', 'login-burst', 'passkey-storm', 'mixed-storm', 'oidc-storm'])
    for (const scenario of Object.values(builtInScenarios)) assert.ok(scenario.endpoints.length > 0, scenario.name)
    assert.deepEqual(builtInScenarios['auth-path']?.phases, ['noop', 'jwt-only', 'full'])
    assert.equal(builtInScenarios['auth-path']?.needsLabDiagnostics, true)
    assert.deepEqual(builtInScenarios['oidc-storm']?.serviceEnv, { TOLLBOOTH_OIDC: 'true' }, 'the services the lab starts serve the provider')
  })

  it('refuses an unknown scenario name with the list of built-ins', () => {
    assert.throws(() => scenarioRef('nope'), (err: { code?: string, message: string }) => err.code === 'CONFIG_INVALID' && err.message.includes('login-storm'))
  })

  it('devnest registers, logs in with the same account and posts with the token', async () => {
    const vu = scriptedUser((request) => (request.path.endsWith('/login') ? { body: { accessToken: 'tok' } } : {}))
    assert.equal(await builtInScenarios.devnest?.iteration(vu, undefined), true)
    assert.deepEqual(vu.sent.map((s) => s.endpoint), ['POST /auth/register', 'POST /auth/login', 'POST /posts'])
    const registered = vu.sent[0]?.request.body as { email: string, password: string }
    assert.deepEqual(vu.sent[1]?.request.body, { email: registered.email, password: registered.password })
    assert.equal(vu.sent[2]?.request.token, 'tok')
  })

  it('me-crowd reads GET /me with one of the tokens from setup', async () => {
    const vu = scriptedUser(() => ({}))
    assert.equal(await builtInScenarios['me-crowd']?.iteration(vu, { tokens: ['a', 'b'] }), true)
    assert.deepEqual(vu.sent.map((s) => [s.endpoint, s.request.method, s.request.path, s.request.token]), [['GET /me', 'GET', '/api/v1/me', 'b']])
  })

  it('devnest stops at the first failed step', async () => {
    const vu = scriptedUser((request) => (request.path.endsWith('/register') ? { status: 503, ok: false } : {}))
    assert.equal(await builtInScenarios.devnest?.iteration(vu, undefined), false)
    assert.equal(vu.sent.length, 1)
  })

  it('loads a JSON scenario: steps, placeholders and values saved from responses', async () => {
    const file = path.join(dir, 'me.json')
    fs.writeFileSync(file, JSON.stringify({
      name: 'me-after-login',
      accounts: 2,
      vus: 4,
      thinkTime: '250ms',
      steps: [
        { endpoint: 'login', method: 'POST', path: '/api/v1/auth/login', body: { email: '{{account.email}}', password: '{{account.password}}' }, save: { token: 'accessToken', who: 'user.id' } },
        { method: 'GET', path: '/api/v1/me?who={{who}}&vu={{vu}}', token: '{{token}}' },
      ],
    }))
    const scenario = await loadScenario(scenarioRef(file))
    assert.equal(scenario.name, 'me-after-login')
    assert.deepEqual(scenario.endpoints, ['login', 'GET /me'])
    assert.equal(scenario.defaults.thinkTimeMs, 250)
    assert.equal(scenario.defaults.accounts, 2)
    const vu = scriptedUser((request) => (request.path.endsWith('/login') ? { body: { accessToken: 'jwt', user: { id: 'u-1' } } } : {}))
    const data = { accounts: [{ email: 'a@x.test', password: 'pw-a-12345' }, { email: 'b@x.test', password: 'pw-b-12345' }] }
    assert.equal(await scenario.iteration(vu, data), true)
    // vu 3, iteration 0 -> account (3 + 0) % 2 = 1
    assert.deepEqual(vu.sent[0]?.request.body, { email: 'b@x.test', password: 'pw-b-12345' })
    assert.equal(vu.sent[1]?.request.path, '/api/v1/me?who=u-1&vu=3')
    assert.equal(vu.sent[1]?.request.token, 'jwt')
  })

  it('refuses malformed JSON scenarios with a message naming the field', () => {
    const cases: Array<[unknown, RegExp]> = [
      [[], /the scenario must be a JSON object/],
      [{ steps: [{ method: 'GET', path: '/a' }] }, /name must be a non-empty string/],
      [{ name: 'x', steps: [] }, /steps must be a non-empty array/],
      [{ name: 'x', steps: [{ method: 'FETCH', path: '/a' }] }, /steps\[0\]\.method/],
      [{ name: 'x', steps: [{ method: 'GET', path: 'a' }] }, /steps\[0\]\.path/],
      [{ name: 'x', steps: [{ method: 'GET', path: '/a', bogus: 1 }] }, /steps\[0\]\.bogus is not a field here \(endpoint, method/],
      [{ name: 'x', steps: [{ method: 'GET', path: '/a/{{nope}}' }] }, /\{\{nope\}\}/],
      [{ name: 'x', steps: [{ method: 'GET', path: '/a/{{account.email}}' }] }, /set "accounts"/],
      [{ name: 'x', vus: -1, steps: [{ method: 'GET', path: '/a' }] }, /vus must be a number >= 0/],
      [{ name: 'x', colour: 'red', steps: [{ method: 'GET', path: '/a' }] }, /colour is not a field here \(name, description/],
    ]
    for (const [raw, message] of cases) {
      assert.throws(() => declarativeScenario('s.json', raw), (err: { code?: string, message: string }) => err.code === 'CONFIG_INVALID' && message.test(err.message), message.source)
    }
  })

  it('loads a JS module scenario and checks its shape', async () => {
    const good = path.join(dir, 'good.mjs')
    fs.writeFileSync(good, 'export default { name: "js", endpoints: ["GET /healthz"], async iteration (vu) { return (await vu.request("GET /healthz", { method: "GET", path: "/healthz" })).ok } }\n')
    const scenario = await loadScenario(scenarioRef(good))
    assert.equal(scenario.name, 'js')
    assert.equal(scenario.defaults.model, 'closed')
    const bad = path.join(dir, 'bad.mjs')
    fs.writeFileSync(bad, 'export default { name: "js" }\n')
    await assert.rejects(loadScenario(scenarioRef(bad)), /iteration must be an async function/)
    await assert.rejects(loadScenario({ file: path.join(dir, 'missing.json') }), /does not exist/)
  })
})
