/**
 * Where hashing work runs: one small interface. pool.ts is tollbooth's own; the lab's harness
 * gives the engine the seed articles' strategies behind the same interface. The engine has
 * already bounded everything a task carries; an executor trusts its input.
 */
import type { TollboothError } from '../errors.js'
import type { AdmissionRequest, AdmissionTicket } from './ticket.js'
import type { Argon2Params, BcryptParams, HashFaultLog, HashPoolStats, HashTaskEvent, ScryptParams } from './types.js'

/** A unit of work, as sent to a worker thread (structured-clone friendly). */
export type HashTask =
  | { kind: 'hash', algorithm: 'argon2id', params: Argon2Params, password: string }
  | { kind: 'hash', algorithm: 'bcrypt', params: BcryptParams, password: string }
  | { kind: 'hash', algorithm: 'scrypt', params: ScryptParams, password: string }
  /** `mismatchRunMs`: a mismatch holds its thread this long, so an outdated, cheaper hash costs what the policy's does (engine.ts). */
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

/** How a task is run: under its ticket (its deadline, client and signal), and whether an abort once running changes nothing. */
export interface HashWork {
  ticket: AdmissionTicket
  keepIfStarted: boolean
  /** When the engine was asked (performance.now()): the one clock reading a request is decided on. */
  now: number
}

export interface HashExecutor {
  /** `tollbooth`, or the name of another executor (the lab's harness). */
  readonly strategy: string
  readonly threads: number
  /** Admission: a ticket (holding a queue place, where the executor has a queue), or the refusal, not counted. */
  admit (request: AdmissionRequest, now: number): AdmissionTicket | TollboothError
  /**
   * Runs one hash or verify under its ticket: one holding its place is queued without asking
   * admission again; one without (released, expired, made at submission) is admitted now.
   * Resolves with the value and the hash's run time; rejects with a coded error.
   */
  run (task: HashTask, work: HashWork): Promise<TimedValue>
  /** Runs work that is no request (warm-up): not counted, but it teaches the mean run time. */
  runInternal (task: HashTask): Promise<TimedValue>
  /** A trivial task round trip, bypassing admission. */
  ping (timeoutMs: number): Promise<void>
  /** Counts a request the engine refused before it reached the executor (bad input, or an admission refusal it answered). */
  recordRefused (event: HashTaskEvent): void
  stats (): HashPoolStats
  onTask (listener: (event: HashTaskEvent) => void): () => void
  close (): Promise<void>
}

/** What an executor is made with: the engine's validated settings. */
export interface ExecutorSettings {
  /** The threads the CPU budget (or the operator) gives hashing. */
  threads: number
  maxQueue: number
  threadNice: number
  log: HashFaultLog | undefined
}

/** Makes the executor the engine runs its work on; default: tollbooth's pool. */
export type ExecutorFactory = (settings: ExecutorSettings) => HashExecutor
