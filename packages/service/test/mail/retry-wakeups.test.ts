/**
 * The mail dispatcher's wake-ups for retries due before its next poll, with mock timers and a
 * mock clock: no database, no SMTP, no waiting.
 */
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import { RetryWakeups } from '../../src/mail/retry-wakeups.js'

describe('retry wake-ups (mock timers)', () => {
  beforeEach(() => { mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 }) })
  afterEach(() => { mock.timers.reset() })

  /** Wake-ups recorded at the mock clock's time. */
  function watched (): { retries: RetryWakeups, wakes: number[] } {
    const wakes: number[] = []
    return { retries: new RetryWakeups(() => { wakes.push(Date.now()) }), wakes }
  }

  it('wakes once for a retry, its slack after the due time', () => {
    const { retries, wakes } = watched()
    retries.add(10)
    mock.timers.tick(14)
    assert.deepEqual(wakes, [])
    mock.timers.tick(1)
    assert.deepEqual(wakes, [15])
    mock.timers.tick(1000)
    assert.deepEqual(wakes, [15], 'once')
  })

  it('still wakes for a later retry added while an earlier one was pending (the wake-up that was lost)', () => {
    // A mail's first retry is due at 10 ms; before that wake-up, its second attempt (made early
    // by a run still going) fails and asks for a retry at 10 + 20 ms. The first wake-up finds
    // nothing due; the second must come all the same.
    const { retries, wakes } = watched()
    retries.add(10)
    mock.timers.tick(10)
    retries.add(20)
    mock.timers.tick(5)
    assert.deepEqual(wakes, [15])
    mock.timers.tick(10)
    assert.deepEqual(wakes, [15], 'not before the second retry is due')
    mock.timers.tick(10)
    assert.deepEqual(wakes, [15, 35])
  })

  it('moves its one timer earlier for an earlier retry, and one wake-up covers every retry due by then', () => {
    const { retries, wakes } = watched()
    retries.add(100)
    retries.add(10)
    retries.add(12)
    // (Node 20's mock clock reads the end of a tick inside its callbacks: tick to the instants.)
    mock.timers.tick(15)
    assert.deepEqual(wakes, [15], 'the 10 and 12 ms retries in one wake-up (12 is due by 15)')
    mock.timers.tick(80)
    assert.deepEqual(wakes, [15], 'nothing more until the 100 ms retry')
    mock.timers.tick(10)
    assert.deepEqual(wakes, [15, 105])
  })

  it('close leaves no timer and no wake-up, and a retry added after it arms none', () => {
    const { retries, wakes } = watched()
    retries.add(10)
    retries.add(50)
    retries.close()
    retries.add(10)
    mock.timers.tick(1000)
    assert.deepEqual(wakes, [])
  })
})
