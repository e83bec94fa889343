/**
 * Whether a stored hash should be replaced after a good login: it was made with
 * another algorithm or other parameters than the current policy. Cheap string
 * work; the caller re-hashes with `engine.hash()`.
 */
import { argon2Version } from './hashers/index.js'
import { inspectStoredHash, type StoredHash } from './limits.js'
import type { HashPolicy } from './types.js'

/** Throws `HASH_FORMAT_UNKNOWN` / `HASH_PARAMS_OUT_OF_BOUNDS` like a verify would. */
export function needsRehash (stored: string, policy: HashPolicy): boolean {
  return storedDiffersFromPolicy(inspectStoredHash(stored), policy)
}

/** Another system's hash (an imported account, algorithm 'foreign') always differs. */
export function storedDiffersFromPolicy (stored: StoredHash, policy: HashPolicy): boolean {
  if (stored.algorithm !== policy.algorithm) return true
  switch (stored.algorithm) {
    case 'argon2id': {
      const want = policy.argon2
      return stored.version !== argon2Version ||
        stored.params.memoryKiB !== want.memoryKiB ||
        stored.params.timeCost !== want.timeCost ||
        stored.params.parallelism !== want.parallelism
    }
    case 'bcrypt':
      return stored.params.cost !== policy.bcrypt.cost
    case 'scrypt': {
      const want = policy.scrypt
      return stored.params.N !== want.N || stored.params.r !== want.r || stored.params.p !== want.p
    }
  }
}
