/**
 * Password checks under way in this process, per throttle key (an account, a client address).
 *
 * The throttle counts a failure once its hash has run (src/db/login-throttle.ts), so password
 * checks sent at once all read the count from before any of them: a burst of wrong passwords
 * for one account passed the bound together, each one costing a hash, and only the hash queue
 * limited it. Now a check is decided on the stored count plus the checks under way (counted as
 * failures made now: login-throttle.ts, `withChecksInFlight`), so the sixth of six guesses sent
 * at once waits like a sixth guess sent in turn.
 *
 * A check ends after its failure is written (or after a success reset the account's count). A
 * read of the counts that began before that write may not see it, so a check that ended after
 * the read began still counts for the decision made on that read: the count may take a failure
 * twice (its write landed just before the read), never miss one.
 *
 * In one process only: each replica (and each `serve --workers` process) holds its own, and the
 * counts meet in PostgreSQL as each check ends. A burst spread over N processes gets at most N
 * times the free failures before the delays start.
 */
import { performance } from 'node:perf_hooks'
import type { ThrottleKeys, ThrottleScope } from '../db/login-throttle.js'

/** How long an ended check is remembered: far longer than a read of the counts takes. */
const endedKeptMs = 10_000

interface KeyState {
  underWay: number
  /** When checks of this key ended (performance.now()), oldest first. */
  endedAt: number[]
}

export class ChecksInFlight {
  readonly #keys = new Map<string, KeyState>()
  /** Every ended check's key names, in the order they ended: what to forget next. */
  readonly #endedOrder: Array<{ name: string, at: number }> = []

  /** The time to take just before reading the counts a check will be decided on. */
  now (): number {
    return performance.now()
  }

  /** Checks of one key under way now, and those that ended at or after `since` (a read's start). */
  count (scope: ThrottleScope, key: string, since: number): number {
    this.#forgetOld(performance.now())
    const state = this.#keys.get(`${scope}\0${key}`)
    if (state === undefined) return 0
    let ended = 0
    for (let i = state.endedAt.length - 1; i >= 0 && (state.endedAt[i] ?? 0) >= since; i--) ended++
    return state.underWay + ended
  }

  /** Counts a check for both keys; call the function it returns once its outcome is recorded. */
  begin (keys: ThrottleKeys): () => void {
    const names = [`account\0${keys.account}`, `address\0${keys.address}`]
    for (const name of names) {
      const state = this.#keys.get(name)
      if (state === undefined) this.#keys.set(name, { underWay: 1, endedAt: [] })
      else state.underWay++
    }
    let ended = false
    return () => {
      if (ended) return
      ended = true
      const now = performance.now()
      for (const name of names) {
        const state = this.#keys.get(name)
        if (state === undefined) continue
        state.underWay--
        state.endedAt.push(now)
        this.#endedOrder.push({ name, at: now })
      }
      this.#forgetOld(now)
    }
  }

  /** Keys remembered: none once every check has ended and been forgotten (a leak shows here). */
  size (now: number = performance.now()): number {
    this.#forgetOld(now)
    return this.#keys.size
  }

  /** Forgets the checks that ended more than `endedKeptMs` ago, and the keys left with nothing. */
  #forgetOld (now: number): void {
    while (this.#endedOrder.length > 0 && (this.#endedOrder[0]?.at ?? now) < now - endedKeptMs) {
      const { name } = this.#endedOrder.shift() ?? { name: '' }
      const state = this.#keys.get(name)
      if (state === undefined) continue
      state.endedAt.shift()
      if (state.underWay === 0 && state.endedAt.length === 0) this.#keys.delete(name)
    }
  }
}
