/**
 * Every hasher (hasher.ts), and dispatch on the stored hash's prefix so a hash made under an
 * earlier policy keeps verifying (and is re-hashed after a good login).
 */
import { createError } from '../../errors.js'
import { argon2Hasher } from './argon2.js'
import { bcryptHasher } from './bcrypt.js'
import { scryptHasher } from './scrypt.js'
import type { Argon2Params, BcryptParams, HashAlgorithm, ScryptParams } from '../types.js'
import type { Hasher, ParamsByAlgorithm } from './hasher.js'

export type AnyHasher = Hasher<Argon2Params> | Hasher<BcryptParams> | Hasher<ScryptParams>

export const hashers: { readonly [A in HashAlgorithm]: Hasher<ParamsByAlgorithm[A]> } = {
  argon2id: argon2Hasher,
  bcrypt: bcryptHasher,
  scrypt: scryptHasher,
}

const hasherList: readonly AnyHasher[] = [argon2Hasher, bcryptHasher, scryptHasher]

/** The hasher that understands this stored hash; `HASH_FORMAT_UNKNOWN` when none does. */
export function hasherFor (stored: string): AnyHasher {
  for (const hasher of hasherList) {
    if (hasher.understands(stored)) return hasher
  }
  throw createError('HASH_FORMAT_UNKNOWN', 'The stored hash has no known algorithm prefix')
}
