/**
 * The public contract of the password engine. `src/hashing/` knows nothing of
 * HTTP or SQL: the server only sees these types and `createPasswordEngine()`.
 */
import type { TollboothError } from '../errors.js'
import type { HashReservation } from './scheduler.js'
import type { CpuBudget } from '../machine/index.js'

/** The algorithms new hashes can be made with, and stored hashes verified with: the one list. */
export const hashAlgorithms = ['argon2id', 'bcrypt', 'scrypt'] as const
export type HashAlgorithm = typeof hashAlgorithms[number]

export interface Argon2Params {
  memoryKiB: number
  timeCost: number
  parallelism: number
}

export interface BcryptParams {
  cost: number
}

export interface ScryptParams {
  /** CPU/memory cost, a power of two. */
  N: number
  r: number
  p: number
}

/** What new hashes are made with; stored hashes that differ are re-hashed after a good login. */
export interface HashPolicy {
  algorithm: HashAlgorithm
  argon2: Argon2Params
  bcrypt: BcryptParams
  scrypt: ScryptParams
}

/**
 * How hashing work is executed: the one list (config choices, the engine's check, the lab's
 * strategies all come from it). `tollbooth` is the CPU-budgeted worker pool with deadlines,
 * admission and cancellation; the others reproduce what the seed articles tried, for
 * side-by-side measurement in the load lab.
 */
export const hashStrategies = ['tollbooth', 'event-loop', 'libuv', 'libuv-128', 'spawn', 'piscina'] as const
export type HashStrategy = typeof hashStrategies[number]

export interface HashRequestOptions {
  /**
   * Time budget in milliseconds, from now, for the hash to be *done*: a request
   * expected to wait for a thread more than the scheduler's admission share (half)
   * of the time before it must start (the budget less a mean run) is refused at
   * once, and one still queued when it can no longer finish in time is removed
   * from the queue. A thread that is free takes it at once,
   * whatever the budget. Undefined: no deadline.
   */
  deadlineMs?: number
  /**
   * The same deadline as an instant in `performance.now()` time, for callers whose
   * budget started earlier (a login's starts when the request arrived, not when its
   * hash is submitted). One already past is refused without queueing. With both
   * given, the earlier applies.
   */
  deadlineAt?: number
  /**
   * Aborting removes a queued request before it costs a hash. A running one is answered
   * HASH_CANCELLED at once and its result discarded, unless `keepIfStarted`.
   */
  signal?: AbortSignal
  /**
   * Once the hash has started, aborting no longer cancels it: it runs to its end and is answered
   * as if no abort had come. For password checks: a verify that ran is decided (and a failure
   * counted) whatever the client does, so hanging up mid-verify never skips the count.
   */
  keepIfStarted?: boolean
  /**
   * Who asks (a client address, say): clients take turns in the queue, so one client's
   * backlog cannot keep the others waiting. Undefined: the service's own work.
   */
  client?: string
  /**
   * The place `PasswordEngine.reserve` held for this request when it was admitted: left out
   * of its own admission checks, and given back when its hash is submitted.
   */
  reservation?: HashReservation
}

export interface VerifyResult {
  match: boolean
  /** The stored hash uses another algorithm or other parameters than the policy. */
  needsRehash: boolean
}

export type HashTaskKind = 'hash' | 'verify'
export type HashTaskOutcome = 'ok' | 'rejected' | 'deadline' | 'cancelled' | 'error'

/** Emitted once per request that reached the engine, for metrics. */
export interface HashTaskEvent {
  kind: HashTaskKind
  outcome: HashTaskOutcome
  /** Time spent queued before a thread picked it up (0 when refused at admission). */
  waitMs: number
  /** Time the hash itself ran (0 when it never ran). */
  runMs: number
}

/** A snapshot in the style of undici's PoolStats. */
export interface HashPoolStats {
  strategy: HashStrategy
  threads: number
  running: number
  queued: number
  completed: number
  rejected: number
  deadlineExceeded: number
  cancelled: number
  failed: number
  /** Recent mean run time of one hash or verify, in milliseconds. */
  meanRunMs: number
}

export interface PasswordEngine {
  readonly policy: HashPolicy
  readonly strategy: HashStrategy
  readonly cpuBudget: CpuBudget
  /** Make a new hash (PHC or modular-crypt string) with the current policy. */
  hash (password: string, options?: HashRequestOptions): Promise<string>
  /**
   * Verify against a stored hash of any supported algorithm (dispatch on its prefix). A mismatch
   * against a hash of other parameters than the policy's answers no sooner than a verify of the
   * policy's takes (its mean run time), so a wrong password's answer does not tell an account
   * with an outdated hash from an unknown one (which `verifyDummy` answers).
   */
  verify (password: string, storedHash: string, options?: HashRequestOptions): Promise<VerifyResult>
  /** Spend exactly one verify against a dummy hash of the current policy (unknown accounts). */
  verifyDummy (password: string, options?: HashRequestOptions): Promise<void>
  /**
   * Cheap and synchronous: throws the SERVICE_OVERLOADED (or HASH_DEADLINE_EXCEEDED) that a
   * `kind` request with these options would get if submitted now, counted as that refusal;
   * returns when it would be admitted. Lets a caller refuse before other costly work (a
   * database query) instead of after it. Reserves nothing: the later request is checked again.
   */
  assertAdmissible (kind: HashTaskKind, options?: HashRequestOptions): void
  /**
   * A place held for an admitted request (check `admission` first) until its hash is submitted
   * (pass it as `reservation`) or it is released: admission counts it as waiting meanwhile
   * (scheduler.ts `HashReservation`). Undefined for strategies without admission.
   */
  reserve (kind: HashTaskKind, options?: HashRequestOptions): HashReservation | undefined
  /** The refusal `assertAdmissible` would throw now, or undefined; counts nothing (a peek). */
  admission (kind: HashTaskKind, options?: HashRequestOptions): TollboothError | undefined
  stats (): HashPoolStats
  /** Listen to every finished, refused or cancelled request; returns an unsubscribe function. */
  onTask (listener: (event: HashTaskEvent) => void): () => void
  /** Resolves when a trivial task round-trips through the executor; rejects otherwise. */
  ping (timeoutMs?: number): Promise<void>
  close (): Promise<void>
}

/** Where the engine reports faults that answer no request (a worker thread's crash, a listener that threw). */
export interface HashFaultLog {
  warn (fields: Record<string, unknown>, message: string): void
}

/** What `createPasswordEngine()` accepts; everything but the policy has a default. */
export interface PasswordEngineOptions {
  /** Checked by `validatePolicy()`; copied and frozen, so later changes to the object do nothing. */
  policy: HashPolicy
  /** Default 'tollbooth'; the others are the load lab's comparison strategies. */
  strategy?: HashStrategy
  /** Worker threads, 1 to 256. Default: the CPU budget (`detectCpuBudget()`). */
  threads?: number
  /** Requests allowed to wait for a thread, 0 to 1,000,000. Default: threads × 64. */
  maxQueue?: number
  /**
   * The hash threads' nice value, 0 to 19 (Linux; elsewhere ignored). Default 10: a hash
   * thread yields a core to the event loop, PostgreSQL and the request path whenever they
   * need it, and takes every cycle they leave. Only tollbooth's pool sets it.
   */
  threadNice?: number
  /** Where to read cgroup limits from (tests point these at fake trees). */
  cpu?: { cgroupRoot?: string, procSelfCgroup?: string }
  /** Faults that answer no request; default: process warnings. The service passes its logger, throttled. */
  log?: HashFaultLog
}
