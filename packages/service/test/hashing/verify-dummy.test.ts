import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createPasswordEngine, type HashTaskEvent, type PasswordEngine } from '../../src/hashing/index.js'
import { performance } from 'node:perf_hooks'
import { bcryptHasher } from '../../src/hashing/hashers/bcrypt.js'
import { cheapPolicy, policyFor, rejection, seedPolicy } from './fixtures.js'

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

    // Same work as a real verify. Each one's fastest run is compared, with a generous factor: a busy
    // machine only ever adds to a run (a thread preempted mid-hash reads ten times slower), so the
    // fastest of several is the work itself, where a median of a few can still be a preempted one.
    const dummyRuns: number[] = []
    const realRuns: number[] = []
    for (let i = 0; i < 11; i++) {
      events.length = 0
      await engine.verifyDummy('whatever was typed')
      await engine.verify('wrong password', stored)
      dummyRuns.push(events[0]?.runMs ?? 0)
      realRuns.push(events[1]?.runMs ?? 0)
    }
    const [dummy, real] = [Math.min(...dummyRuns), Math.min(...realRuns)]
    assert.ok(dummy / real > 0.25 && dummy / real < 4, `fastest dummy ${dummy.toFixed(2)} ms vs fastest real ${real.toFixed(2)} ms (dummy runs ${dummyRuns.map((ms) => ms.toFixed(1)).join(' ')}; real ${realRuns.map((ms) => ms.toFixed(1)).join(' ')})`)
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

describe('a wrong password against an outdated hash takes as long as against an unknown account', () => {
  // The policy is bcrypt cost 10 (tens of ms); the account's hash is from a cost-4 policy (about 1 ms).
  let engine: PasswordEngine
  const outdated = bcryptHasher.hashSync('the right password', { cost: 4 })
  before(async () => { engine = await createPasswordEngine({ policy: seedPolicy, threads: 1 }) })
  after(async () => { await engine.close() })

  async function medianMs (times: number, fn: () => Promise<unknown>): Promise<number> {
    const runs: number[] = []
    for (let i = 0; i < times; i++) {
      const started = performance.now()
      await fn()
      runs.push(performance.now() - started)
    }
    return median(runs)
  }

  it('pads a mismatch to the policy\'s verify time, and leaves a match as fast as its hash', async () => {
    const unknown = await medianMs(5, async () => { await engine.verifyDummy('a guess') })
    let result = await engine.verify('a guess', outdated)
    assert.deepEqual(result, { match: false, needsRehash: true })
    const wrong = await medianMs(5, async () => { result = await engine.verify('a guess', outdated) })
    const right = await medianMs(5, async () => { result = await engine.verify('the right password', outdated) })
    assert.deepEqual(result, { match: true, needsRehash: true })
    // Without the padding a wrong password here took about 1 ms against the unknown account's tens.
    assert.ok(wrong > 0.6 * unknown, `wrong password ${wrong.toFixed(1)} ms, unknown account ${unknown.toFixed(1)} ms`)
    assert.ok(right < 0.5 * unknown, `right password ${right.toFixed(1)} ms: a match is not padded (unknown account ${unknown.toFixed(1)} ms)`)
  })

  it('holds its hash thread that long too: a request queued behind it waits as long as behind an unknown account\'s dummy', async () => {
    const waits: Record<string, number[]> = { outdated: [], unknown: [] }
    for (let i = 0; i < 5; i++) {
      for (const kind of ['outdated', 'unknown'] as const) {
        const events: HashTaskEvent[] = []
        const stop = engine.onTask((event) => { events.push(event) })
        const first = kind === 'outdated' ? engine.verify('a guess', outdated) : engine.verifyDummy('a guess')
        // One thread: the probe waits in the queue for as long as the first holds the thread.
        const probe = engine.verifyDummy('the request behind')
        await Promise.all([first, probe])
        stop()
        waits[kind]?.push(events[1]?.waitMs ?? 0)
      }
    }
    const [behindOutdated, behindUnknown] = [median(waits.outdated ?? []), median(waits.unknown ?? [])]
    // Padded with a timer instead, the thread was free after the cheap hash's 1 to 2 ms.
    assert.ok(behindOutdated > 0.6 * behindUnknown, `behind the outdated hash's mismatch ${behindOutdated.toFixed(1)} ms, behind a dummy ${behindUnknown.toFixed(1)} ms`)
  })
})
