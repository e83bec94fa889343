/**
 * Firebase Authentication's scrypt variant, verify only (worker threads only): the key derived by
 * scrypt(password, salt ‖ salt separator, N = 2^memCost, r = rounds, p = 1, 64 bytes) encrypts the
 * project's signer key with AES-256-CTR (the key's first 32 bytes, a zero IV); the result is the
 * stored hash. https://github.com/firebase/scrypt
 * Stored with everything it needs, so a verify reads nothing else:
 * `$firebase-scrypt$ln=<memCost>,r=<rounds>$<salt>$<hash>$<salt separator>$<signer key>`,
 * unpadded standard base64.
 */
import { createCipheriv, scryptSync, timingSafeEqual } from 'node:crypto'
import { checkForeignBound, decodeCanonicalB64, encodeUnpaddedB64, foreignFormatUnknown, parseCanonicalParams, type ForeignBound, type ForeignStoredHash, type ForeignVerifier } from './foreign.js'
import { scryptMaxmemBytes } from './scrypt.js'

/** A Firebase project's password hash parameters (the console's "Password hash parameters"). */
export interface FirebaseHashParams {
  signerKey: Buffer
  saltSeparator: Buffer
  rounds: number
  memCost: number
}

export interface ParsedFirebaseScrypt {
  params: FirebaseHashParams
  salt: Buffer
  hash: Buffer
}

/** Firebase's own ranges (its CLI's `auth:import` takes rounds 1 to 8, mem-cost 1 to 14): 2^14 · 8 · 128 bytes is 16 MiB a verify. */
export const firebaseScryptLimits = {
  memCost: { min: 1, max: 14, reason: 'Firebase takes mem_cost 1 to 14 (N = 2^14 at most)' },
  rounds: { min: 1, max: 8, reason: 'Firebase takes rounds 1 to 8' },
  saltBytes: { min: 1, max: 64, reason: 'Firebase writes 12-byte salts; more than 64 bytes is not a salt it made' },
  saltSeparatorBytes: { min: 0, max: 16, reason: 'Firebase writes a 1-byte separator' },
  signerKeyBytes: { min: 16, max: 128, reason: 'Firebase writes a 64-byte signer key, and the hash is as long' },
} as const satisfies Record<string, ForeignBound>

const prefix = '$firebase-scrypt$'
const derivedKeyBytes = 64

function parseFirebaseScrypt (stored: string): ParsedFirebaseScrypt {
  if (!stored.startsWith(prefix)) throw foreignFormatUnknown('not a $firebase-scrypt$ string')
  const fields = stored.slice(prefix.length).split('$')
  const [paramText, saltText, hashText, separatorText, keyText] = fields
  if (fields.length !== 5 || paramText === undefined || saltText === undefined || hashText === undefined || separatorText === undefined || keyText === undefined) {
    throw foreignFormatUnknown('a $firebase-scrypt$ string has parameters, salt, hash, salt separator and signer key')
  }
  const { ln, r } = parseCanonicalParams(paramText, ['ln', 'r'] as const)
  const signerKey = decodeCanonicalB64(keyText, 'signer key')
  const hash = decodeCanonicalB64(hashText, 'hash')
  if (hash.length !== signerKey.length) throw foreignFormatUnknown('the hash is not as long as the signer key')
  return {
    params: { signerKey, saltSeparator: decodeCanonicalB64(separatorText, 'salt separator'), rounds: r, memCost: ln },
    salt: decodeCanonicalB64(saltText, 'salt'),
    hash,
  }
}

export function formatFirebaseScrypt (parsed: ParsedFirebaseScrypt): string {
  const { params, salt, hash } = parsed
  return `${prefix}ln=${params.memCost},r=${params.rounds}$${encodeUnpaddedB64(salt)}$${encodeUnpaddedB64(hash)}$${encodeUnpaddedB64(params.saltSeparator)}$${encodeUnpaddedB64(params.signerKey)}`
}

/** Throws `HASH_PARAMS_OUT_OF_BOUNDS` when a project's parameters are outside Firebase's ranges. */
export function checkFirebaseHashParams (params: FirebaseHashParams): void {
  checkForeignBound(params.memCost, 'Firebase scrypt mem_cost', firebaseScryptLimits.memCost)
  checkForeignBound(params.rounds, 'Firebase scrypt rounds', firebaseScryptLimits.rounds)
  checkForeignBound(params.saltSeparator.length, 'Firebase salt separator length in bytes', firebaseScryptLimits.saltSeparatorBytes)
  checkForeignBound(params.signerKey.length, 'Firebase signer key length in bytes', firebaseScryptLimits.signerKeyBytes)
}

function scryptParams (params: FirebaseHashParams): { N: number, r: number, p: number } {
  return { N: 2 ** params.memCost, r: params.rounds, p: 1 }
}

function inspect (stored: string): ForeignStoredHash {
  const parsed = parseFirebaseScrypt(stored)
  checkFirebaseHashParams(parsed.params)
  checkForeignBound(parsed.salt.length, 'Firebase salt length in bytes', firebaseScryptLimits.saltBytes)
  const { N, r } = scryptParams(parsed.params)
  return { algorithm: 'foreign', format: 'firebase-scrypt', memoryBytes: 128 * N * r }
}

/** The hash Firebase stores for this password and salt under the project's parameters. */
export function firebaseScryptHashSync (password: string, salt: Buffer, params: FirebaseHashParams): Buffer {
  const scrypt = scryptParams(params)
  const derived = scryptSync(password, Buffer.concat([salt, params.saltSeparator]), derivedKeyBytes, { ...scrypt, maxmem: scryptMaxmemBytes(scrypt) })
  const cipher = createCipheriv('aes-256-ctr', derived.subarray(0, 32), Buffer.alloc(16))
  return Buffer.concat([cipher.update(params.signerKey), cipher.final()])
}

export const firebaseScryptVerifier: ForeignVerifier = {
  algorithm: 'firebase-scrypt',
  understands: (stored) => stored.startsWith(prefix),
  inspect,
  verifySync (password, stored) {
    const { params, salt, hash } = parseFirebaseScrypt(stored)
    return timingSafeEqual(firebaseScryptHashSync(password, salt, params), hash)
  },
}
