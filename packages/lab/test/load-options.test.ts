/**
 * The load a command runs: the user's options over the scenario's defaults, checked once at the
 * lab's face (resolveLoad), as k6 reads its own flags.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { resolveLoad } from '../src/lab.js'
import { builtInScenarios } from '../src/scenarios/index.js'

describe('load resolution', () => {
  const loginStorm = builtInScenarios['login-storm'] as NonNullable<(typeof builtInScenarios)['login-storm']>

  it('uses the scenario defaults: login-storm ramps to 100 VUs over a third of the run', () => {
    const load = resolveLoad(loginStorm, { durationMs: 30_000 })
    assert.equal(load.model, 'closed')
    if (load.model !== 'closed') return
    assert.equal(load.startVus, 0)
    assert.deepEqual(load.stages, [{ durationMs: 10_000, target: 100 }, { durationMs: 20_000, target: 100 }])
    assert.equal(load.accounts, 50)
    assert.equal(load.honourRetryAfter, true)
  })

  it('holds --vus from the start for the whole duration, like k6', () => {
    const load = resolveLoad(loginStorm, { durationMs: 5000, vus: 7 })
    assert.ok(load.model === 'closed' && load.startVus === 7)
    assert.deepEqual(load.stages, [{ durationMs: 5000, target: 7 }])
  })

  it('switches to the open model with a rate, and refuses both at once', () => {
    const load = resolveLoad(loginStorm, { durationMs: 5000, rate: 40 })
    assert.ok(load.model === 'open')
    if (load.model !== 'open') return
    assert.equal(load.startRate, 40)
    assert.deepEqual(load.stages, [{ durationMs: 5000, target: 40 }])
    assert.throws(() => resolveLoad(loginStorm, { vus: 2, rate: 3 }), { code: 'CONFIG_INVALID' })
    assert.throws(() => resolveLoad(loginStorm, { workers: 0 }), { code: 'CONFIG_INVALID' })
    assert.throws(() => resolveLoad(loginStorm, { vus: 2.5 }), { code: 'CONFIG_INVALID' })
  })

  it('spreads a closed model over source addresses, and refuses them for an open model', () => {
    assert.equal(resolveLoad(loginStorm, { vus: 4, sourceAddresses: 3 }).sourceAddresses, 3)
    assert.equal(resolveLoad(loginStorm, { vus: 4, sourceAddresses: 1 }).sourceAddresses, undefined, 'one address is the default: not written')
    assert.equal(resolveLoad(loginStorm, { vus: 2, sourceAddresses: 5 }).sourceAddresses, 2, 'no more addresses than users')
    assert.equal(resolveLoad(loginStorm, { stages: [{ durationMs: 1000, target: 3 }, { durationMs: 1000, target: 0 }], sourceAddresses: 50 }).sourceAddresses, 3, 'the peak of the stages')
    assert.throws(() => resolveLoad(loginStorm, { rate: 10, sourceAddresses: 3 }), { code: 'CONFIG_INVALID', field: 'sourceAddresses' })
    assert.throws(() => resolveLoad(loginStorm, { vus: 4, sourceAddresses: 0 }), { code: 'CONFIG_INVALID' })
    assert.throws(() => resolveLoad(loginStorm, { vus: 4, sourceAddresses: 70_000 }), { code: 'CONFIG_INVALID' })
  })

  it('takes a scenario\'s own length, users and addresses: login-burst\'s users all from the start, each from an address of its own', () => {
    const loginBurst = builtInScenarios['login-burst'] as NonNullable<(typeof builtInScenarios)['login-burst']>
    const load = resolveLoad(loginBurst, {})
    assert.ok(load.model === 'closed')
    assert.equal(load.startVus, 1001)
    assert.deepEqual(load.stages, [{ durationMs: 1000, target: 1001 }])
    assert.equal(load.sourceAddresses, 1001)
    const fewer = resolveLoad(loginBurst, { vus: 11, durationMs: 2000 })
    assert.ok(fewer.model === 'closed' && fewer.startVus === 11 && fewer.sourceAddresses === 11)
    assert.deepEqual(fewer.stages, [{ durationMs: 2000, target: 11 }])
    assert.equal(resolveLoad(loginBurst, { vus: 11, sourceAddresses: 1 }).sourceAddresses, undefined, 'the user\'s --source-addresses wins')
    assert.equal(resolveLoad(builtInScenarios['me-crowd'] as typeof loginBurst, {}).model, 'open')
  })
})
