import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { clockLeewayMs, keySchedule, nextKeyActivation, type ScheduledKey } from '../../src/keys/schedule.js'

const ttlMs = 900_000
const key = (kid: string, activatesAtMs: number, retiredAtMs?: number, alg = 'EdDSA'): ScheduledKey => ({ kid, alg, activatesAtMs, retiredAtMs })
const kids = (keys: readonly ScheduledKey[]): string[] => keys.map((k) => k.kid)

describe('key schedule', () => {
  const keys = [key('a', 0), key('b', 10_000_000)]

  it('a key announced ahead is published but does not sign yet', () => {
    const now = 9_000_000
    const schedule = keySchedule(keys, now, ttlMs)
    assert.equal(schedule.signing?.kid, 'a')
    assert.deepEqual(kids(schedule.verifying), ['a', 'b'])
  })

  it('once the next key signs, the old one verifies for the token lifetime and the leeway, then leaves', () => {
    assert.equal(keySchedule(keys, 10_000_000, ttlMs).signing?.kid, 'b')
    assert.deepEqual(kids(keySchedule(keys, 10_000_000 + ttlMs + clockLeewayMs - 1, ttlMs).verifying), ['a', 'b'])
    assert.deepEqual(kids(keySchedule(keys, 10_000_000 + ttlMs + clockLeewayMs, ttlMs).verifying), ['b'])
  })

  it('a retired key neither signs nor verifies, and the one before it signs again', () => {
    const schedule = keySchedule([key('a', 0), key('b', 1000, 5000)], 6000, ttlMs)
    assert.equal(schedule.signing?.kid, 'a')
    assert.deepEqual(kids(schedule.verifying), ['a'])
  })

  it('a key retired at a time this clock has not reached yet is retired all the same (a replica behind the database\'s clock)', () => {
    const schedule = keySchedule([key('a', 0), key('b', 1000, 9000)], 6000, ttlMs)
    assert.equal(schedule.signing?.kid, 'a')
    assert.deepEqual(kids(schedule.verifying), ['a'])
  })

  it('with no key activated yet, the first announced one signs at once rather than none', () => {
    const retiredSigner = keySchedule([key('a', 0, 50), key('b', 3_960_000), key('c', 7_000_000)], 100, ttlMs)
    assert.equal(retiredSigner.signing?.kid, 'b', 'the signing key retired while the next was announced')
    assert.deepEqual(kids(retiredSigner.verifying), ['b', 'c'])
    assert.equal(keySchedule([key('a', 1000)], 900, ttlMs).signing?.kid, 'a', 'a clock behind the one that created the first key')
    assert.equal(keySchedule([key('a', 0, 50)], 100, ttlMs).signing, undefined, 'no live key: none signs')
  })

  it('creates the first key at once, the next one ahead when the newest is due or of another algorithm', () => {
    const policy = { alg: 'EdDSA', rotationMs: 3_600_000, publishAheadMs: 360_000 }
    assert.equal(nextKeyActivation([], 5, policy), 5)
    assert.equal(nextKeyActivation([key('a', 0)], 3_599_999, policy), undefined)
    assert.equal(nextKeyActivation([key('a', 0)], 3_600_000, policy), 3_960_000)
    assert.equal(nextKeyActivation([key('a', 0), key('b', 3_960_000)], 3_700_000, policy), undefined, 'the announced key counts: no second one')
    assert.equal(nextKeyActivation([key('a', 0)], 10, { ...policy, alg: 'ES256' }), 360_010)
    assert.equal(nextKeyActivation([key('a', 0)], 10 ** 12, { ...policy, rotationMs: 0 }), undefined, '0: no rotation by age')
    assert.equal(nextKeyActivation([key('a', 0, 50)], 100, policy), 100, 'every key retired: a new one at once')
    assert.equal(nextKeyActivation([key('a', 0, 50), key('b', 3_960_000)], 100, policy), undefined, 'a key announced ahead is left: it signs, no other is made')
  })
})
