import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { createPasswordEngine, type HashAlgorithm, type PasswordEngine, type PasswordEngineOptions } from '../../src/hashing/index.js'
import { executorFor } from '../../src/harness/strategies/index.js'
import { cheapPolicy, policyFor, seedPolicy } from '../hashing/fixtures.js'

const comparisonStrategies = ['event-loop', 'libuv', 'libuv-128', 'spawn', 'piscina'] as const
type Strategy = typeof comparisonStrategies[number]

/** An engine on one of the harness's executors, as the harness makes it. */
async function seedEngine (strategy: Strategy, options: PasswordEngineOptions): Promise<PasswordEngine> {
  return await createPasswordEngine(options, executorFor(strategy))
}
const algorithms: HashAlgorithm[] = ['argon2id', 'bcrypt', 'scrypt']

describe('the load lab\'s comparison strategies', () => {
  for (const strategy of comparisonStrategies) {
    it(`${strategy}: hashes and verifies every algorithm, and hashes made elsewhere`, async () => {
      const engine = await seedEngine(strategy, { policy: cheapPolicy, threads: 2 })
      const reference = await createPasswordEngine({ policy: policyFor('bcrypt'), threads: 1 })
      try {
        assert.equal(engine.strategy, strategy)
        assert.ok((await engine.hash('open sesame', { deadlineMs: 60_000 })).startsWith('$argon2id$'))
        for (const algorithm of algorithms) {
          const other = await seedEngine(strategy, { policy: policyFor(algorithm), threads: 1 })
          const made = await other.hash('open sesame')
          await other.close()
          assert.deepEqual(await engine.verify('open sesame', made), { match: true, needsRehash: algorithm !== 'argon2id' })
          assert.equal((await engine.verify('open sesame!', made)).match, false)
        }
        assert.equal((await engine.verify('pw', await reference.hash('pw'))).match, true)
        const before = engine.stats().completed
        await engine.verifyDummy('anything')
        assert.equal(engine.stats().completed - before, 1)
      } finally {
        await engine.close()
        await reference.close()
      }
    })
  }

  it('event-loop: the hash blocks the event loop while it runs', async () => {
    const engine = await seedEngine('event-loop', { policy: seedPolicy })
    try {
      const stored = await engine.hash('pw')
      const timerDue = performance.now()
      let timerLateMs = 0
      const timer = new Promise<void>((resolve) => setTimeout(() => { timerLateMs = performance.now() - timerDue; resolve() }, 0))
      const verifyStarted = performance.now()
      await engine.verify('pw', stored)
      const verifyMs = performance.now() - verifyStarted
      await timer
      assert.ok(timerLateMs >= verifyMs * 0.5, `a 0 ms timer fired ${timerLateMs.toFixed(1)} ms late during a ${verifyMs.toFixed(1)} ms verify`)
    } finally {
      await engine.close()
    }
  })

  it('libuv: hashes queue on libuv\'s shared pool and starve other pool work', async () => {
    const engine = await seedEngine('libuv', { policy: seedPolicy })
    try {
      assert.equal(engine.stats().threads, 4)
      const stored = await engine.hash('pw')
      const canary = async (): Promise<number> => await new Promise((resolve) => {
        const started = performance.now()
        randomBytes(16, () => { resolve(performance.now() - started) })
      })
      const idle = await canary()
      const verifies = Array.from({ length: 12 }, async () => await engine.verify('pw', stored))
      const starved = await canary()
      await Promise.all(verifies)
      // 12 verifies on 4 threads: the canary waits behind at least one round of them.
      assert.ok(starved > idle + 20, `libuv canary: ${idle.toFixed(2)} ms idle, ${starved.toFixed(2)} ms behind the hashes`)
    } finally {
      await engine.close()
    }
  })

  it('tollbooth: hashes never touch libuv\'s pool (the canary stays fast)', async () => {
    const engine = await createPasswordEngine({ policy: seedPolicy, threads: 2, maxQueue: 100 })
    try {
      const stored = await engine.hash('pw')
      const verifies = Array.from({ length: 12 }, async () => await engine.verify('pw', stored))
      const samples: number[] = []
      for (let i = 0; i < 5; i++) {
        samples.push(await new Promise<number>((resolve) => {
          const started = performance.now()
          randomBytes(16, () => { resolve(performance.now() - started) })
        }))
      }
      await Promise.all(verifies)
      samples.sort((a, b) => a - b)
      // Generous: the two hash threads keep both cores busy, but the pool itself is free.
      assert.ok((samples[2] ?? Infinity) < 50, `libuv canary median ${(samples[2] ?? 0).toFixed(2)} ms while 12 hashes ran`)
    } finally {
      await engine.close()
    }
  })
})
