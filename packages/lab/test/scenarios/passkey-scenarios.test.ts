/** The passkey scenarios' choices, without a service: who signs in how in mixed-storm, and the flags that go with them. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { labMain } from '../../src/cli/commands.js'
import { resolveLoad } from '../../src/lab.js'
import { builtInScenarios } from '../../src/scenarios/index.js'
import { signsInWithPasskey } from '../../src/scenarios/mixed-storm.js'

describe('mixed-storm', () => {
  it('gives exactly the share of 100 users a passkey, spread over their numbers', () => {
    for (const share of [0, 0.25, 0.5, 1]) {
      const passkeyUsers = Array.from({ length: 100 }, (_, id) => id).filter((id) => signsInWithPasskey({ id }, share))
      assert.equal(passkeyUsers.length, share * 100, `share ${share}`)
    }
    const firstTen = Array.from({ length: 10 }, (_, id) => signsInWithPasskey({ id }, 0.5))
    assert.ok(firstTen.includes(true) && firstTen.includes(false), 'a ramp brings both kinds in from the start')
  })

  it('takes --passkey-share, half by default; no other scenario does', () => {
    const mixed = builtInScenarios['mixed-storm']
    const storm = builtInScenarios['login-storm']
    assert.ok(mixed !== undefined && storm !== undefined)
    assert.equal(resolveLoad(mixed, {}).passkeyShare, 0.5)
    assert.equal(resolveLoad(mixed, { passkeyShare: 0.2 }).passkeyShare, 0.2)
    assert.equal(resolveLoad(storm, {}).passkeyShare, undefined)
    assert.throws(() => resolveLoad(storm, { passkeyShare: 0.2 }), (err: { code?: string, message: string }) => err.code === 'CONFIG_INVALID' && /mixed-storm/.test(err.message))
    assert.throws(() => resolveLoad(mixed, { passkeyShare: 1.5 }), (err: { code?: string }) => err.code === 'CONFIG_INVALID')
  })

  it('a list of scenarios goes with lab compare only', async () => {
    await assert.rejects(labMain(['run', '--scenario', 'passkey-storm,login-storm']), /lab compare --scenario passkey-storm,login-storm/)
  })
})
