/**
 * Where hashing work runs. One small interface, one implementation per file:
 * `pool.ts` is tollbooth's own (CPU-budgeted threads, admission, deadlines,
 * cancellation); the load lab's comparison strategies ('event-loop', 'libuv',
 * 'spawn', 'piscina') live in strategies/, one file each, behind the same
 * interface, so the engine does not know which one runs its work.
 *
 * The engine has already parsed and bounded everything a task carries; an
 * executor trusts its input.
 */
import type { TollboothError } from '../errors.js'
import type { HashReservation } from './scheduler.js'
import type { Argon2Params, BcryptParams, HashPoolStats, HashRequestOptions, HashStrategy, HashTaskEvent, HashTaskKind, ScryptParams } from './types.js'

/** A unit of work, as sent to a worker thread (structured-clone friendly). */
export type HashTask =
  | { kind: 'hash', algorithm: 'argon2id', params: Argon2Params, password: string }
  | { kind: 'hash', algorithm: 'bcrypt', params: BcryptParams, password: string }
  | { kind: 'hash', algorithm: 'scrypt', params: ScryptParams, password: string }
  /**
   * `mismatchRunMs`: a mismatch keeps its thread busy until this much run time has passed, so a
   * wrong password against an outdated, cheaper hash costs what one against the policy's does,
   * in time and in the thread it holds (engine.ts).
   */
  | { kind: 'verify', password: string, stored: string, mismatchRunMs?: number }
  | { kind: 'ping' }

/** What every hash worker thread is started with. */
export interface HashWorkerData {
  /** The thread lowers its own priority to this nice value (Linux). */
  threadNice: number
}

/** What a worker answers: the value, and how long the hash itself ran, measured inside the worker. */
export type HashReply =
  | { ok: true, value: string | boolean | null, runMs: number }
  | { ok: false, code: string, message: string, runMs: number }

/** A task's value, and how long the hash ran (measured where it ran). */
export interface TimedValue { value: string | boolean, runMs: number }

export interface HashExecutor {
  readonly strategy: HashStrategy
  readonly threads: number
  /**
   * Runs one hash or verify under the request's deadline and signal. Resolves with the
   * worker's value; rejects with a coded error (SERVICE_OVERLOADED, HASH_DEADLINE_EXCEEDED,
   * HASH_CANCELLED, HASH_POOL_CLOSED ...).
   */
  run (task: HashTask, options?: HashRequestOptions): Promise<string | boolean>
  /** `run`, with how long the hash itself ran (its queue wait left out). */
  runTimed (task: HashTask, options?: HashRequestOptions): Promise<TimedValue>
  /** The admission refusal `run` would reject with now, or undefined; counts nothing. */
  admission (kind: HashTaskKind, options?: HashRequestOptions): TollboothError | undefined
  /** A place held for an admitted request until its hash is submitted; undefined without admission. */
  reserve (kind: HashTaskKind, options?: HashRequestOptions): HashReservation | undefined
  /** Runs work that is no request (warm-up): not counted, but it teaches the mean run time. */
  runInternal (task: HashTask): Promise<TimedValue>
  /** A trivial task round trip, bypassing admission. */
  ping (timeoutMs: number): Promise<void>
  /** Counts a request the engine refused before it reached the executor (bad input). */
  recordRefused (event: HashTaskEvent): void
  stats (): HashPoolStats
  onTask (listener: (event: HashTaskEvent) => void): () => void
  close (): Promise<void>
}
