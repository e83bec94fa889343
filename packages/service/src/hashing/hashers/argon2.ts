/**
 * argon2id through @node-rs/argon2's synchronous functions (called in worker
 * threads only). Stored as a PHC string, version 0x13.
 */
import { hashSync, verifySync, type Algorithm, type Version } from '@node-rs/argon2'
import type { Hasher } from './hasher.js'
import type { Argon2Params } from '../types.js'

// The package declares these as ambient const enums, which isolated modules may not read.
const argon2id = 2 as Algorithm.Argon2id
const version0x13 = 1 as Version.V0x13

export const argon2Hasher: Hasher<Argon2Params> = {
  algorithm: 'argon2id',
  understands: (stored) => stored.startsWith('$argon2id$'),
  hashSync (password, params) {
    return hashSync(password, {
      algorithm: argon2id,
      version: version0x13,
      memoryCost: params.memoryKiB,
      timeCost: params.timeCost,
      parallelism: params.parallelism,
      outputLen: 32,
    })
  },
  // The stored string carries its own parameters and salt; verifySync compares in constant time.
  verifySync: (password, stored) => verifySync(stored, password),
}
