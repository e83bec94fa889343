/**
 * Password checks under way in this process, per throttle key, and the checks waiting for room.
 * A failure is counted once its hash has run, so checks sent at once would all pass on the count
 * from before any of them: a check starts only if it would still pass were every check under way
 * for its keys to fail (`withChecksInFlight`), else it waits for one to end and reads again (not
 * refused, so concurrent logins of one account are still served). A check that ended after a
 * read began still counts for that read: a failure may be counted twice, never missed. Per
 * process: N processes give a burst at most N times the free failures.
 */
import { performance } from 'node:perf_hooks'
import type { ThrottleKeys, ThrottleScope } from '../db/index.js'

/** How long an ended check is remembered: far longer than a read of the counts takes. */
const endedKeptMs = 10_000

interface KeyState {
  underWay: number
  /** When checks of this key ended (performance.now()), oldest first. */
  endedAt: number[]
  /** Checks waiting for one of this key's to end, first come first woken. */
  waiters: Waiter[]
}

/** A check waiting for room on the keys that hold it back; woken with the scope whose check ended. */
interface Waiter {
  /** Its place in every queue it waits in (`takePlace`): lower is woken first. */
  place: number
  wake: (scope: ThrottleScope) => void
}

/** Queues `waiter` after every waiter with a lower place: at the end, unless it waited before. */
function insertByPlace (waiters: Waiter[], waiter: Waiter): void {
  let at = waiters.length
  while (at > 0 && (waiters[at - 1]?.place ?? -1) > waiter.place) at--
  waiters.splice(at, 0, waiter)
}

const scopes: readonly ThrottleScope[] = ['account', 'address', 'device']

/** The name of `scope`'s key in `keys`, if it has one. */
function nameOf (keys: ThrottleKeys, scope: ThrottleScope): string | undefined {
  const key = keys[scope]
  return key === undefined ? undefined : `${scope}\0${key}`
}

/** Each present key's scope and name. */
function names (keys: ThrottleKeys): Array<[ThrottleScope, string]> {
  return scopes.flatMap((scope) => {
    const name = nameOf(keys, scope)
    return name === undefined ? [] : [[scope, name] as [ThrottleScope, string]]
  })
}

export class ChecksUnderWay {
  readonly #keys = new Map<string, KeyState>()
  /** Every ended check's key names, in the order they ended: what to forget next. */
  readonly #endedOrder: Array<{ name: string, at: number }> = []
  /** Checks under way over every key, and who waits for there to be none (`whenIdle`). */
  #underWayTotal = 0
  #idleWaiters: Array<() => void> = []
  #nextPlace = 0

  /** The time to take just before reading the counts a check will be decided on. */
  now (): number {
    return performance.now()
  }

  /** Checks of one key under way now. */
  underWay (scope: ThrottleScope, key: string): number {
    return this.#keys.get(`${scope}\0${key}`)?.underWay ?? 0
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

  /** Counts a check for each of its keys; call the function it returns once its outcome is recorded. */
  begin (keys: ThrottleKeys): () => void {
    const keyNames = names(keys)
    for (const [, name] of keyNames) this.#state(name).underWay++
    this.#underWayTotal++
    let ended = false
    return () => {
      if (ended) return
      ended = true
      if (--this.#underWayTotal === 0) {
        for (const resolve of this.#idleWaiters.splice(0)) resolve()
      }
      const now = performance.now()
      for (const [, name] of keyNames) {
        const state = this.#state(name)
        state.underWay--
        state.endedAt.push(now)
        this.#endedOrder.push({ name, at: now })
      }
      this.#wakeNext(keyNames)
      this.#forgetOld(now)
    }
  }

  /** A check's place in the queues, taken at its first wait and kept, so one held back again is not put behind later checks. */
  takePlace (): number {
    return this.#nextPlace++
  }

  /**
   * Waits for a check to end on one of `scopes` (the keys holding this one back): resolves with
   * that scope, or null at `deadlineAt` or when `signal` aborts. It queues at `place`.
   */
  async waitForEnd (keys: ThrottleKeys, waitScopes: readonly ThrottleScope[], deadlineAt: number, signal?: AbortSignal, place: number = this.takePlace()): Promise<ThrottleScope | null> {
    if (signal?.aborted === true) return null
    const keyNames = waitScopes.flatMap((scope) => nameOf(keys, scope) ?? [])
    const states = keyNames.map((name) => this.#state(name))
    return await new Promise<ThrottleScope | null>((resolve) => {
      const settle = (woke: ThrottleScope | null): void => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        states.forEach((state, i) => {
          const at = state.waiters.indexOf(waiter)
          if (at !== -1) state.waiters.splice(at, 1)
          this.#dropIfIdle(keyNames[i] ?? '', state)
        })
        resolve(woke)
      }
      const waiter: Waiter = { place, wake: (scope) => { settle(scope) } }
      const onAbort = (): void => { settle(null) }
      const timer = setTimeout(() => { settle(null) }, Math.max(0, deadlineAt - performance.now()))
      signal?.addEventListener('abort', onAbort, { once: true })
      for (const state of states) insertByPlace(state.waiters, waiter)
    })
  }

  /** Wakes the next waiting check of `scopes`' keys: a woken check that does not take its room hands it on. */
  passOn (keys: ThrottleKeys, passScopes: readonly ThrottleScope[] = scopes): void {
    for (const scope of passScopes) {
      const name = nameOf(keys, scope)
      if (name !== undefined) this.#keys.get(name)?.waiters[0]?.wake(scope)
    }
  }

  /**
   * Wakes every waiting check of `scopes`' keys, after a 429 on their recorded failures: each would
   * get the same 429, and woken one by one the tail of a burst would reach its deadline (a 503).
   */
  wakeAll (keys: ThrottleKeys, wakeScopes: readonly ThrottleScope[]): void {
    for (const scope of wakeScopes) {
      const name = nameOf(keys, scope)
      // Each wake takes the waiter out of the queue: wake a copy.
      if (name !== undefined) for (const waiter of [...this.#keys.get(name)?.waiters ?? []]) waiter.wake(scope)
    }
  }

  /** Resolves once no check is under way: at shutdown, so a check whose client left still writes its outcome. */
  async whenIdle (): Promise<void> {
    if (this.#underWayTotal === 0) return
    await new Promise<void>((resolve) => { this.#idleWaiters.push(resolve) })
  }

  /** Keys remembered: none once every check has ended and been forgotten (a leak shows here). */
  size (now: number = performance.now()): number {
    this.#forgetOld(now)
    for (const [name, state] of this.#keys) this.#dropIfIdle(name, state)
    return this.#keys.size
  }

  /** Wakes the first waiter of each key in turn (a waiter woken once leaves every queue). */
  #wakeNext (keyNames: Array<[ThrottleScope, string]>): void {
    for (const [scope, name] of keyNames) this.#keys.get(name)?.waiters[0]?.wake(scope)
  }

  #state (name: string): KeyState {
    let state = this.#keys.get(name)
    if (state === undefined) this.#keys.set(name, state = { underWay: 0, endedAt: [], waiters: [] })
    return state
  }

  #dropIfIdle (name: string, state: KeyState): void {
    if (state.underWay === 0 && state.endedAt.length === 0 && state.waiters.length === 0) this.#keys.delete(name)
  }

  /** Forgets the checks that ended more than `endedKeptMs` ago, and the keys left with nothing. */
  #forgetOld (now: number): void {
    while (this.#endedOrder.length > 0 && (this.#endedOrder[0]?.at ?? now) < now - endedKeptMs) {
      const { name } = this.#endedOrder.shift() ?? { name: '' }
      const state = this.#keys.get(name)
      if (state === undefined) continue
      state.endedAt.shift()
      this.#dropIfIdle(name, state)
    }
  }
}
