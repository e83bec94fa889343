import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { hashers } from '../../src/hashing/hashers/registry.js'
import { TollboothPool } from '../../src/hashing/pool.js'
import type { HashTaskEvent } from '../../src/hashing/types.js'
import { crashPassword } from './fixtures/crashing-worker.js'
import { cheapPolicy, rejection, unadmitted } from './fixtures.js'

const crashingWorkerUrl = new URL('./fixtures/crashing-worker.js', import.meta.url).href

describe('a hash worker thread that crashes', () => {
  it('fails only its own request, and a new thread takes its place', async (t) => {
    const pool = new TollboothPool({ threads: 2, maxQueue: 100, workerUrl: crashingWorkerUrl })
    t.after(async () => { await pool.close() })
    const stored = hashers.argon2id.hashSync('right', cheapPolicy.argon2)

    // The crash among others, queued and running on both threads.
    const others = Array.from({ length: 10 }, async () => (await pool.run({ kind: 'verify', password: 'right', stored }, unadmitted())).value)
    const crash = rejection(pool.run({ kind: 'verify', password: crashPassword, stored }, unadmitted()), 'INTERNAL')
    const results = await Promise.all(others)
    assert.deepEqual(results, Array.from({ length: 10 }, () => true), 'every other request is answered')
    await crash

    // The pool has two threads again: two slow verifies at once both start without waiting
    // for the other (each waits less than half the other's run).
    const slowStored = hashers.bcrypt.hashSync('right', { cost: 12 })
    const events: HashTaskEvent[] = []
    pool.onTask((event) => { events.push(event) })
    const after = await Promise.all([1, 2].map(async () => (await pool.run({ kind: 'verify', password: 'right', stored: slowStored }, unadmitted())).value))
    assert.deepEqual(after, [true, true])
    assert.equal(events.length, 2)
    for (const event of events) assert.ok(event.waitMs < 0.5 * event.runMs, `waited ${event.waitMs.toFixed(0)} ms beside a ${event.runMs.toFixed(0)} ms run`)
    const stats = pool.stats()
    assert.equal(stats.failed, 1)
    assert.equal(stats.completed, 12)
  })
})
