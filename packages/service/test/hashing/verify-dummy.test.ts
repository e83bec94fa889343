import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createPasswordEngine, type HashTaskEvent, type PasswordEngine } from '../../src/hashing/index.js'
import { cheapPolicy, policyFor, rejection } from './fixtures.js'

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}

describe('verifyDummy (unknown accounts)', () => {
  // Heavier than the cheapest parameters so run times are well above timer noise.
  const policy = { ...cheapPolicy, argon2: { memoryKiB: 4096, timeCost: 2, parallelism: 1 } }
  let engine: PasswordEngine
  const events: HashTaskEvent[] = []
  before(async () => {
    engine = await createPasswordEngine({ policy, threads: 1 })
    engine.onTask((event) => { events.push(event) })
  })
  after(async () => { await engine.close() })

  it('costs exactly one verify task, of the current policy', async () => {
    const stored = await engine.hash('real password')
    events.length = 0
    const before = engine.stats().completed
    await engine.verifyDummy('whatever was typed')
    assert.equal(engine.stats().completed, before + 1)
    assert.equal(events.length, 1)
    assert.equal(events[0]?.kind, 'verify')
    assert.equal(events[0]?.outcome, 'ok')

    // Same work as a real verify: compare medians, with a generous factor.
    const dummyRuns: number[] = []
    const realRuns: number[] = []
    for (let i = 0; i < 7; i++) {
      events.length = 0
      await engine.verifyDummy('whatever was typed')
      await engine.verify('wrong password', stored)
      dummyRuns.push(events[0]?.runMs ?? 0)
      realRuns.push(events[1]?.runMs ?? 0)
    }
    const ratio = median(dummyRuns) / median(realRuns)
    assert.ok(ratio > 0.25 && ratio < 4, `dummy ${median(dummyRuns).toFixed(2)} ms vs real ${median(realRuns).toFixed(2)} ms`)
  })

  it('honours deadlines and cancellation like any request', async () => {
    await rejection(engine.verifyDummy('x', { signal: AbortSignal.abort() }), 'HASH_CANCELLED')
  })

  it('with a bcrypt policy, a password over 72 bytes still costs one verify', async () => {
    const bcrypt = await createPasswordEngine({ policy: policyFor('bcrypt'), threads: 1 })
    try {
      await bcrypt.verifyDummy('x'.repeat(100))
      assert.equal(bcrypt.stats().completed, 1)
    } finally {
      await bcrypt.close()
    }
  })
})
