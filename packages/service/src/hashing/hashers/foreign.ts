/**
 * Verifiers for hashes made by other systems (imported accounts): they only verify, never hash,
 * and a good login replaces their hash with the policy's. Each parses one canonical spelling
 * (the import writes it) and bounds its own cost parameters before any work, as limits.ts does
 * for ours: a stored hash is attacker input.
 */
import { createError } from '../../errors.js'

export type ForeignFormat = 'argon2i' | 'pbkdf2-sha256' | 'pbkdf2-sha512' | 'firebase-scrypt' | 'no-password'

/** A bounded foreign hash as the engine sees it: always outdated (re-hashed after a good login). */
export interface ForeignStoredHash {
  algorithm: 'foreign'
  format: ForeignFormat
  /** What one verify holds while it runs. */
  memoryBytes: number
}

export interface ForeignVerifier {
  readonly algorithm: ForeignFormat
  /** Cheap prefix test: is this stored string for me? */
  understands (stored: string): boolean
  /** Cheap: parses and bounds; `HASH_FORMAT_UNKNOWN` or `HASH_PARAMS_OUT_OF_BOUNDS`. Main thread. */
  inspect (stored: string): ForeignStoredHash
  /** Expensive: constant-time comparison against the stored hash. Worker threads only. */
  verifySync (password: string, stored: string): boolean
}

export interface ForeignBound {
  min: number
  max: number
  /** Why the bound is there, quoted in the error message. */
  reason: string
}

/** Throws `HASH_PARAMS_OUT_OF_BOUNDS` naming the parameter, its value and the bound's reason. */
export function checkForeignBound (value: number, what: string, bound: ForeignBound): void {
  if (!Number.isSafeInteger(value) || value < bound.min || value > bound.max) {
    throw createError('HASH_PARAMS_OUT_OF_BOUNDS', `The stored hash's ${what} is ${value}, outside ${bound.min}..${bound.max}: ${bound.reason}`)
  }
}

export function foreignFormatUnknown (why: string): Error {
  // The stored hash itself is never put in the message: it would end up in logs.
  return createError('HASH_FORMAT_UNKNOWN', `The stored hash is not understood: ${why}`)
}

const b64 = /^[A-Za-z0-9+/]*$/

/** Unpadded standard base64, canonical (re-encodes to the same text), as PHC strings write it. */
export function decodeCanonicalB64 (text: string, what: string): Buffer {
  if (!b64.test(text) || text.length % 4 === 1) throw foreignFormatUnknown(`${what} is not unpadded base64`)
  const bytes = Buffer.from(text, 'base64')
  if (encodeUnpaddedB64(bytes) !== text) throw foreignFormatUnknown(`${what} is not canonical base64`)
  return bytes
}

export function encodeUnpaddedB64 (bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64').replace(/=+$/, '')
}

const decimal = /^(?:0|[1-9][0-9]{0,9})$/

/** `a=1,b=2` with exactly these names in this order (one canonical spelling). */
export function parseCanonicalParams<K extends string> (text: string, names: readonly K[]): Record<K, number> {
  const pairs = text.split(',')
  if (pairs.length !== names.length) throw foreignFormatUnknown(`the parameters are not ${names.join(', ')}`)
  const out: Partial<Record<K, number>> = {}
  names.forEach((name, index) => {
    const pair = pairs[index] ?? ''
    const prefix = `${name}=`
    const value = pair.slice(prefix.length)
    if (!pair.startsWith(prefix) || !decimal.test(value)) throw foreignFormatUnknown(`parameter '${name}' is missing or not a decimal integer`)
    out[name] = Number(value)
  })
  return out as Record<K, number>
}
