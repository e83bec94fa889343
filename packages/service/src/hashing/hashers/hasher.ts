/**
 * One small interface, one implementation per algorithm (argon2.ts, bcrypt.ts, scrypt.ts).
 * `hashSync` and `verifySync` are expensive and only ever called inside a worker thread
 * (worker.ts); `understands` is cheap string work.
 */
import type { Argon2Params, BcryptParams, HashAlgorithm, ScryptParams } from '../types.js'

export interface Hasher<P> {
  readonly algorithm: HashAlgorithm
  /** Cheap prefix test: is this stored string for me? */
  understands (stored: string): boolean
  /** Expensive: a new hash with a fresh random salt. Worker threads only. */
  hashSync (password: string, params: P): string
  /** Expensive: constant-time comparison against a stored hash. Worker threads only. */
  verifySync (password: string, stored: string): boolean
}

export interface ParamsByAlgorithm {
  argon2id: Argon2Params
  bcrypt: BcryptParams
  scrypt: ScryptParams
}
