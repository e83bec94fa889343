/**
 * Paced refusals: what breaks a retry storm. A client that does not wait out `Retry-After` is back
 * within a millisecond, and thousands of refusals a second take the CPU hashing needs (a
 * metastable failure). So a client's first refusal is answered at once; a request from the same
 * client that comes back before its `Retry-After` and would be refused again is held (a timer and
 * an open socket) until then, and checked once more. Holding only delays what would be a refusal
 * anyway; a polite client is never held by its own refusal.
 *
 * A client is known by its keys: its connection, its address and, for logins, its account. An
 * address or an account may be shared (a NAT, a team), so those keys pace only a request on a
 * young connection (under `maxNewConnectionHoldMs` since its first request, connection-age.ts),
 * and at most until it is no longer young, or one through a trusted proxy (in full). Past its
 * youth a connection is its client's own key, and its neighbours' refusals do not hold it. The
 * shared keys learn only from refusals of requests that arrived young, so a newcomer behind an
 * office's NAT is not held for a colleague's refusal on the colleague's own connection.
 *
 * Releases are spread (a hold lasts its time plus up to `releaseSpread` of it), so a crowd refused
 * together is not released, and refused, together again (docs/explanation/overload.md).
 */
import { isTollboothError, type TollboothError } from '../errors.js'
import { ConnectionAges } from './connection-age.js'

export interface PacerOptions {
  /** Milliseconds, monotonic: performance.now() in production; tests move their own. */
  now: () => number
  /** Longest hold of one request, whatever Retry-After said (default 10 s). */
  maxHoldMs?: number
  /** How long a connection is young, held by its shared keys' refusals (default 200 ms from its first request; before the spread). */
  maxNewConnectionHoldMs?: number
  /** Requests held at once; past it, refusals are answered at once (default 10,000). */
  maxHeld?: number
  /** Addresses and accounts remembered; past it, expired ones are forgotten, then the oldest (default 100,000). */
  maxKeys?: number
  /** A hold lasts its time x (1 + releaseSpread x random()), so held crowds leave a few at a time (default 0.25; 0: exact). */
  releaseSpread?: number
  /** Uniform in [0, 1) (default Math.random; tests pass their own). */
  random?: () => number
}

/** Who asks: its own connection (any object, kept weakly) and the keys it may share with others. */
export interface ClientKeys {
  /** The client's own connection; absent when it is not the client's own (a proxy's). */
  connection?: object | undefined
  /** Ms since its connection's first request (connection-age.ts); absent: young until the pacer has seen the connection. */
  connectionAgeMs?: number
  /** Its connection's age when it arrived, by which its refusal is noted (a first login refused after a long wait is still a new client's). */
  arrivalAgeMs?: number
  /** Keys other clients may share (`ip:…`, `account:…`): they pace a request on a young connection, or one with no connection of its own. */
  keys: readonly string[]
}

export interface AdmitOptions {
  /** This request is held at most this long (a caller that must keep time for the work after). */
  maxHoldMs?: number
  /** Made only when a request is held; it aborts when the client hangs up. */
  holdSignal?: () => AbortSignal
}

export class RefusalPacer {
  private readonly now: () => number
  private readonly maxHoldMs: number
  private readonly maxNewConnectionHoldMs: number
  private readonly maxHeld: number
  private readonly maxKeys: number
  private readonly releaseSpread: number
  private readonly random: () => number
  /** Connections that have had a request through the pacer, each with its not-before time (0 when it was never refused). */
  private readonly byConnection = new WeakMap<object, number>()
  /** Key -> not-before time; insertion order is update order (a key is re-inserted on update). */
  private readonly byKey = new Map<string, number>()
  private heldNow = 0
  /** Refusals held so far (for metrics). */
  heldTotal = 0

  constructor (options: PacerOptions) {
    this.now = options.now
    this.maxHoldMs = options.maxHoldMs ?? 10_000
    this.maxNewConnectionHoldMs = options.maxNewConnectionHoldMs ?? 200
    this.maxHeld = options.maxHeld ?? 10_000
    this.maxKeys = options.maxKeys ?? 100_000
    this.releaseSpread = options.releaseSpread ?? 0.25
    this.random = options.random ?? Math.random
    this.connections = new ConnectionAges(this.now)
  }

  /** The ages of the connections the HTTP server has seen (connection-age.ts), on the pacer's clock. */
  readonly connections: ConnectionAges

  get held (): number { return this.heldNow }
  get rememberedKeys (): number { return this.byKey.size }

  /** How long a request of this client must be held before it is checked again; 0: not paced. */
  holdMs (client: ClientKeys): number {
    return this.holdMsOf(client, this.ownNotBefore(client))
  }

  /** `holdMs` with the connection's not-before already looked up (undefined: not seen yet). */
  private holdMsOf (client: ClientKeys, own: number | undefined): number {
    const now = this.now()
    let dueMs = Math.max(0, (own ?? 0) - now)
    const youthLeftMs = this.youthLeftMs(client, own)
    if (youthLeftMs > 0) {
      let sharedNotBefore = 0
      for (const key of client.keys) sharedNotBefore = Math.max(sharedNotBefore, this.byKey.get(key) ?? 0)
      dueMs = Math.max(dueMs, Math.min(sharedNotBefore - now, youthLeftMs))
    }
    return Math.min(this.maxHoldMs, dueMs)
  }

  /**
   * A refusal was answered: this client may come back in `retryAfterSeconds`. Its shared keys
   * learn it only from a request that arrived young, or with no connection of its own.
   */
  noteRefusal (client: ClientKeys, retryAfterSeconds: number): void {
    this.note(client, retryAfterSeconds, this.arrivedYoung(client, this.ownNotBefore(client)))
  }

  /** The not-before of the client's connection; undefined when it has none or the pacer has not seen it. */
  private ownNotBefore (client: ClientKeys): number | undefined {
    return client.connection === undefined ? undefined : this.byConnection.get(client.connection)
  }

  private note (client: ClientKeys, retryAfterSeconds: number, young: boolean): void {
    const notBefore = this.now() + retryAfterSeconds * 1000
    if (client.connection !== undefined) this.byConnection.set(client.connection, notBefore)
    if (!young) return
    for (const key of client.keys) {
      this.byKey.delete(key)
      this.byKey.set(key, notBefore)
    }
    if (this.byKey.size > this.maxKeys) this.forget()
  }

  /** How long the request's connection is (or was, at `ageMs`) still young: Infinity with none of its own; 0 or less: not young. */
  private youthLeftMs (client: ClientKeys, own: number | undefined, ageMs = client.connectionAgeMs): number {
    if (client.connection === undefined) return Infinity
    return this.maxNewConnectionHoldMs - (ageMs ?? (own === undefined ? 0 : Infinity))
  }

  /** Whether the request arrived on a young connection, or with none of its own: its refusal teaches its shared keys. */
  private arrivedYoung (client: ClientKeys, own: number | undefined): boolean {
    return this.youthLeftMs(client, own, client.arrivalAgeMs) > 0
  }

  /**
   * The whole rule: `attempt()` returns what admission gives, or the refusal it would get now,
   * counting nothing; `refuse` counts and throws the refusal answered. An early client is held,
   * then tried once more, so admission is asked once, and once more after a hold.
   */
  async admit<T> (client: ClientKeys, attempt: () => T | TollboothError, refuse: (refusal: TollboothError) => never, options: AdmitOptions = {}): Promise<T> {
    const first = attempt()
    // Looked up before the connection is registered: a client that gives no age is young until the pacer has seen it.
    const own = this.ownNotBefore(client)
    if (client.connection !== undefined && own === undefined) this.byConnection.set(client.connection, 0)
    if (!isTollboothError(first)) return first
    const dueMs = this.holdMsOf(client, own)
    const young = this.arrivedYoung(client, own)
    const holdMs = Math.min(dueMs * (1 + this.releaseSpread * this.random()), this.maxHoldMs, options.maxHoldMs ?? Infinity)
    let answer = first
    // Under a millisecond due (a connection a moment from the end of its youth) is no hold: a
    // timer would wait a millisecond or more, and the metric would count it.
    if (dueMs >= 1 && holdMs >= 1 && this.heldNow < this.maxHeld) {
      this.heldNow++
      this.heldTotal++
      try {
        await hold(holdMs, options.holdSignal?.())
      } catch {
        // The client left while held: no one reads the answer, and nothing is counted.
        throw first
      } finally {
        this.heldNow--
      }
      const again = attempt()
      if (!isTollboothError(again)) return again
      answer = again
    }
    if (answer.retryAfterSeconds !== undefined) this.note(client, answer.retryAfterSeconds, young)
    return refuse(answer)
  }

  /**
   * From the oldest update on: the expired keys up to the first that is not, then, still too many,
   * the oldest. It visits only what it forgets, plus one: a whole scan on every refusal of a full
   * map would make each refusal dear.
   */
  private forget (): void {
    const now = this.now()
    for (const [key, notBefore] of this.byKey) {
      if (notBefore > now && this.byKey.size <= this.maxKeys) break
      this.byKey.delete(key)
    }
  }
}

/** Resolves after `ms`, rejects when `signal` aborts first. The global setTimeout: the tests' mock timers drive it, node:timers/promises' they may not. */
function hold (ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    if (signal?.aborted === true) onAbort()
    else signal?.addEventListener('abort', onAbort, { once: true })
  })
}
