/**
 * The admission ticket (`HashTicket` in types.ts) and when a request's hash is due.
 */
import type { QueuePlace } from './queue/index.js'
import type { HashTaskKind, HashTicket } from './types.js'

/** A hash request as admission decides it: the engine fills it once from `HashRequest`. */
export interface AdmissionRequest {
  readonly kind: HashTaskKind
  /** When the hash must be done, in `performance.now()` time; undefined: no deadline. */
  readonly deadlineAt: number | undefined
  /** Whose turn in the queue; '' for the service's own work. */
  readonly client: string
  readonly signal: AbortSignal | undefined
}

export class AdmissionTicket implements HashTicket {
  #place: QueuePlace | undefined

  /**
   * `place`: the queue place admission gave it (none: an executor without admission, or a
   * request admitted only when its hash is submitted). `admitAgain`: admission for `readmit`,
   * which throws its refusal, counted, and returns the new place.
   */
  constructor (readonly request: AdmissionRequest, place: QueuePlace | undefined, private readonly admitAgain: (request: AdmissionRequest) => QueuePlace | undefined) {
    this.#place = place
  }

  get kind (): HashTaskKind { return this.request.kind }
  get deadlineAt (): number | undefined { return this.request.deadlineAt }
  get client (): string { return this.request.client }
  get signal (): AbortSignal | undefined { return this.request.signal }
  get holdsPlace (): boolean { return this.#place !== undefined && !this.#place.released }

  release (): void {
    this.#place?.release()
  }

  readmit (): void {
    this.release()
    this.#place = undefined
    this.#place = this.admitAgain(this.request)
  }

  /** As its hash is queued: whether it still held its place (given back now, the queue entry takes it). */
  takePlace (): boolean {
    const held = this.holdsPlace
    this.release()
    this.#place = undefined
    return held
  }
}

/**
 * A request's answer is due `deadlineMs` after its arrival, so its hash must be done earlier by
 * what the answer still takes (the session's INSERT, the token's signature, the write, a run
 * longer than the mean): a fortieth of the deadline, at most 50 ms, with a wide margin.
 */
export function answerReserveMs (deadlineMs: number): number {
  return Math.min(50, deadlineMs / 40)
}

/** When the hash of a request received at `receivedAt` (performance.now() time), due `deadlineMs` later, must be done. */
export function hashDeadlineAt (receivedAt: number, deadlineMs: number): number {
  return receivedAt + deadlineMs - answerReserveMs(deadlineMs)
}
