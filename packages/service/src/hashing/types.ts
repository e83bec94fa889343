/**
 * The public contract of the password engine. hashing/ knows nothing of HTTP or SQL: the rest
 * of the service sees only these types and `createPasswordEngine()`.
 */
import type { TollboothError } from '../errors.js'
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
 * A hash request as admission sees it. `deadlineMs` counts from now, `deadlineAt` is an instant
 * in `performance.now()` time (a request's budget starts when it arrived); with both, the earlier
 * applies. The deadline is when the hash must be done. No deadline: no limit.
 */
export interface HashRequest {
  deadlineMs?: number
  deadlineAt?: number
  /** Who asks (a client address): clients take turns in the queue. Undefined: the service's own work. */
  client?: string
  /** Aborting removes a queued request before it costs a hash; a running one is answered HASH_CANCELLED, unless `keepIfStarted`. */
  signal?: AbortSignal
}

/**
 * An admitted hash request: what admission decided once, at the door, for the rest of the
 * request to consume. It holds a place in the queue until its hash is submitted (admission
 * counts it as waiting), and the engine queues its hash without asking admission again. A
 * request that waits gives its place back (`release`) and is admitted again after (`readmit`).
 */
export interface HashTicket {
  readonly kind: HashTaskKind
  /** When the hash must be done, in `performance.now()` time; undefined: no deadline. */
  readonly deadlineAt: number | undefined
  readonly client: string
  readonly signal: AbortSignal | undefined
  /** Whether it still holds its place: admitted and not queued, released or expired. */
  readonly holdsPlace: boolean
  /** Gives the place back; again is nothing. */
  release (): void
  /** After a wait: a new place, or the refusal thrown (and counted) that admission gives now. */
  readmit (): void
}

/** What a hash or verify is asked with: an admitted request's ticket, or a request admitted at submission. */
export interface HashOptions extends HashRequest {
  /** The request's ticket (`PasswordEngine.admit`); the request's own fields are then its. */
  ticket?: HashTicket
  /** Once the hash has started, an abort no longer cancels it: hanging up mid-verify never skips a failure's count. */
  keepIfStarted?: boolean
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
  /** `tollbooth`, or the name of the executor given in its place (the lab's harness). */
  strategy: string
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
  /** Admission decisions made so far (one per ticket, one per re-admission after a wait, one per request without a ticket). */
  admissionChecks: number
}

/** The memory the hash threads may hold together, and each thread's share: the most a verify may hold. */
export interface HashPoolMemory {
  budgetBytes: number
  perThreadBytes: number
}

export interface PasswordEngine {
  readonly policy: HashPolicy
  /** `tollbooth`, or the name of the executor the engine was given instead. */
  readonly strategy: string
  readonly cpuBudget: CpuBudget
  readonly memory: HashPoolMemory
  /**
   * Admission, decided once: a ticket holding a place in the queue, or the refusal a `kind` request
   * would get now, not yet counted (`refuse` counts the answer given). Synchronous and cheap.
   */
  admit (kind: HashTaskKind, request?: HashRequest): HashTicket | TollboothError
  /** Counts a refusal `admit` returned as that request's outcome, and throws it. */
  refuse (kind: HashTaskKind, refusal: TollboothError): never
  /** Make a new hash (PHC or modular-crypt string) with the current policy. */
  hash (password: string, options?: HashOptions): Promise<string>
  /**
   * Verify against a stored hash of any supported algorithm (dispatch on its prefix). A mismatch
   * against an outdated hash answers no sooner than a verify of the policy's, so its timing does
   * not tell the account from an unknown one (`verifyDummy`).
   */
  verify (password: string, storedHash: string, options?: HashOptions): Promise<VerifyResult>
  /** Spend exactly one verify against a dummy hash of the current policy (unknown accounts). */
  verifyDummy (password: string, options?: HashOptions): Promise<void>
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
  /** Worker threads, 1 to 256. Default: the CPU budget (`detectCpuBudget()`). */
  threads?: number
  /**
   * What the threads may hold together, in bytes: threads × the policy's hash must fit, and a
   * stored hash above one thread's share is refused unrun. Default: the hash threads' share of the
   * process's memory limit (`detectMemoryBudget()`).
   */
  memoryBudgetBytes?: number
  /** Requests allowed to wait for a thread, 0 to 1,000,000. Default: threads × 64. */
  maxQueue?: number
  /** The hash threads' nice value, 0 to 19 (Linux only). Default 10: the event loop and PostgreSQL get a core first. */
  threadNice?: number
  /** Where to read cgroup limits from (tests point these at fake trees). */
  cpu?: { cgroupRoot?: string, procSelfCgroup?: string }
  /** Faults that answer no request; default: process warnings. The service passes its logger, throttled. */
  log?: HashFaultLog
}
