/**
 * scrypt through node:crypto's `scryptSync` (worker threads only: the async
 * `crypto.scrypt` would run on libuv's shared 4-thread pool). Stored as a PHC
 * string `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<hash>` (the passlib spelling).
 */
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto'
import type { Hasher } from './hasher.js'
import { formatScrypt, parseScrypt } from './phc.js'
import type { ScryptParams } from '../types.js'

const saltBytes = 16
const hashBytes = 32

/**
 * OpenSSL needs 128·r·(N + p) bytes and more, and refuses the call (rather than
 * allocating) above `maxmem`; node's default of 32 MiB would refuse the policy's
 * own N=2^15 r=8 exactly at the edge. The stored parameters are bounded before
 * any call (limits.ts), so this only names the real need plus a little room.
 */
export function scryptMaxmemBytes (params: ScryptParams): number {
  return 128 * params.r * (params.N + params.p + 2) + 1024 * 1024
}

function derive (password: string, salt: Buffer, keyBytes: number, params: ScryptParams): Buffer {
  return scryptSync(password, salt, keyBytes, { N: params.N, r: params.r, p: params.p, maxmem: scryptMaxmemBytes(params) })
}

export const scryptHasher: Hasher<ScryptParams> = {
  algorithm: 'scrypt',
  understands: (stored) => stored.startsWith('$scrypt$'),
  hashSync (password, params) {
    // Synchronous randomBytes reads the kernel CSPRNG directly, in this worker thread.
    const salt = randomBytes(saltBytes)
    return formatScrypt({ params, salt, hash: derive(password, salt, hashBytes, params) })
  },
  verifySync (password, stored) {
    const { params, salt, hash } = parseScrypt(stored)
    return timingSafeEqual(derive(password, salt, hash.length, params), hash)
  },
}
