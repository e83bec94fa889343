import assert from 'node:assert/strict'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { describe, it } from 'node:test'
import { createPasswordEngine, type HashTaskEvent } from '../../src/hashing/index.js'
import { cheapPolicy } from './fixtures.js'

describe('the event loop while hashes run', () => {
  it('stays responsive (p99 delay < 250 ms) while 200 hashes run in the workers', async (t) => {
    // ~10-20 ms a hash: seconds of CPU in total, which on the event loop would freeze it.
    const policy = { ...cheapPolicy, argon2: { memoryKiB: 7168, timeCost: 4, parallelism: 1 } }
    const engine = await createPasswordEngine({ policy, maxQueue: 256 })
    let totalRunMs = 0
    engine.onTask((event: HashTaskEvent) => { totalRunMs += event.runMs })
    const delay = monitorEventLoopDelay({ resolution: 10 })
    try {
      delay.enable()
      const hashes = await Promise.all(Array.from({ length: 200 }, async (_, i) => await engine.hash(`password ${i}`)))
      delay.disable()
      assert.equal(new Set(hashes).size, 200)
      assert.equal(engine.stats().completed, 200)
      const p99Ms = delay.percentile(99) / 1e6
      t.diagnostic(`event loop delay p99 ${p99Ms.toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms; ${totalRunMs.toFixed(0)} ms of hashing on ${engine.stats().threads} thread(s)`)
      assert.ok(totalRunMs > 500, `the hashes did real work (${totalRunMs.toFixed(0)} ms in total)`)
      // Run on this thread, the hashes would hold it for their whole total (seconds) at once. The bound
      // is generous: a busy machine may leave this thread unscheduled for a tenth of a second.
      assert.ok(p99Ms < 250, `event loop delay p99 ${p99Ms.toFixed(1)} ms while ${totalRunMs.toFixed(0)} ms of hashing ran`)
    } finally {
      delay.disable()
      await engine.close()
    }
  })
})
