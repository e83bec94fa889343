/**
 * argon2i (an older variant some systems still store), verify only, through @node-rs/argon2's
 * `verifySync`, which reads the variant from the PHC string (worker threads only). Bounded by
 * the same numbers as our argon2id (limits.ts hashLimits.argon2; a test holds them equal).
 */
import { verifySync } from '@node-rs/argon2'
import { checkForeignBound, type ForeignBound, type ForeignStoredHash, type ForeignVerifier } from './foreign.js'
import { parseArgon2 } from './phc.js'

export const argon2iLimits = {
  memoryKiB: { min: 8, max: 256 * 1024, reason: 'each running verify holds m KiB; 256 MiB per thread is already far beyond OWASP (19 MiB)' },
  timeCost: { min: 1, max: 16, reason: 'passes multiply the time; 16 passes over the largest memory is seconds per verify' },
  parallelism: { min: 1, max: 16, reason: 'lanes run on one worker thread here, so more lanes only add overhead' },
  saltBytes: { min: 8, max: 64, reason: 'argon2 requires at least 8 bytes; more than 64 is not a salt we or a sane tool made' },
  hashBytes: { min: 16, max: 128, reason: 'shorter tags are too weak to trust; longer ones add work and no security' },
} as const satisfies Record<string, ForeignBound>

function inspect (stored: string): ForeignStoredHash {
  const { params, salt, hash } = parseArgon2(stored, 'argon2i')
  checkForeignBound(params.parallelism, 'argon2i parallelism', argon2iLimits.parallelism)
  checkForeignBound(params.timeCost, 'argon2i timeCost', argon2iLimits.timeCost)
  checkForeignBound(params.memoryKiB, 'argon2i memoryKiB', { ...argon2iLimits.memoryKiB, min: 8 * params.parallelism, reason: `${argon2iLimits.memoryKiB.reason}; argon2 needs 8 KiB per lane` })
  checkForeignBound(salt.length, 'argon2i salt length in bytes', argon2iLimits.saltBytes)
  checkForeignBound(hash.length, 'argon2i hash length in bytes', argon2iLimits.hashBytes)
  return { algorithm: 'foreign', format: 'argon2i', memoryBytes: params.memoryKiB * 1024 }
}

export const argon2iVerifier: ForeignVerifier = {
  algorithm: 'argon2i',
  understands: (stored) => stored.startsWith('$argon2i$'),
  inspect,
  // The string carries its variant, parameters and salt; verifySync compares in constant time.
  verifySync: (password, stored) => verifySync(stored, password),
}
