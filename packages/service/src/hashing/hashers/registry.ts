/**
 * Every hasher (hasher.ts) and every verifier of another system's hashes (foreign.ts), and
 * dispatch on the stored hash's prefix so a hash made under an earlier policy, or imported, keeps
 * verifying (and is re-hashed after a good login).
 */
import { createError } from '../../errors.js'
import { argon2Hasher } from './argon2.js'
import { argon2iVerifier } from './argon2i.js'
import { bcryptHasher } from './bcrypt.js'
import { firebaseScryptVerifier } from './firebase-scrypt.js'
import type { ForeignVerifier } from './foreign.js'
import { noPasswordVerifier } from './no-password.js'
import { pbkdf2Sha256Verifier, pbkdf2Sha512Verifier } from './pbkdf2.js'
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

const foreignVerifiers: readonly ForeignVerifier[] = [argon2iVerifier, pbkdf2Sha256Verifier, pbkdf2Sha512Verifier, firebaseScryptVerifier, noPasswordVerifier]

/** The verifier of another system's hash that understands this stored hash, if one does. */
export function foreignVerifierFor (stored: string): ForeignVerifier | undefined {
  return foreignVerifiers.find((verifier) => verifier.understands(stored))
}

/** The hasher or foreign verifier that understands this stored hash; `HASH_FORMAT_UNKNOWN` when none does. */
export function hasherFor (stored: string): AnyHasher | ForeignVerifier {
  for (const hasher of hasherList) {
    if (hasher.understands(stored)) return hasher
  }
  const foreign = foreignVerifierFor(stored)
  if (foreign !== undefined) return foreign
  throw createError('HASH_FORMAT_UNKNOWN', 'The stored hash has no known algorithm prefix')
}
