/**
 * Recovery codes: ten random codes shown once, kept as HMAC-SHA-256 under a key derived from the
 * key-encryption key, with the user id. A fast keyed hash is right here, no slow password hash:
 * each code carries 60 random bits (not a person's choice), so guessing one offline is out of reach
 * even with the hash, and without the key the hash cannot be tested at all; online guesses meet
 * the second-factor throttle.
 */
import { createHmac, hkdfSync, randomInt } from 'node:crypto'

const recoveryCodeCount = 10
/** Crockford's base32: no I, L, O, U, so a code read aloud or copied by hand is not mistyped. */
const alphabet = '0123456789abcdefghjkmnpqrstvwxyz'
/** 12 characters of 5 bits: 60 bits. */
const codeLength = 12
const groupLength = 4

/** Ten new codes, as shown: `xxxx-xxxx-xxxx`. */
export function newRecoveryCodes (): string[] {
  return Array.from({ length: recoveryCodeCount }, () => {
    const chars = Array.from({ length: codeLength }, () => alphabet[randomInt(alphabet.length)] ?? '0').join('')
    return chars.match(new RegExp(`.{${groupLength}}`, 'g'))?.join('-') ?? chars
  })
}

/** A code as typed: any case, dashes and spaces ignored; undefined when it cannot be a code. */
export function normaliseRecoveryCode (typed: string): string | undefined {
  const code = typed.toLowerCase().replace(/[\s-]/g, '')
  if (code.length !== codeLength) return undefined
  for (const char of code) if (!alphabet.includes(char)) return undefined
  return code
}

/** The key recovery codes are hashed with, derived from the KEK (never the KEK itself). */
export function recoveryCodeKey (keyEncryptionKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', keyEncryptionKey, Buffer.alloc(0), 'tollbooth recovery codes', 32))
}

/** How a code is kept: bound to its user, so a hash copied to another account's rows matches nothing. */
export function recoveryCodeHash (key: Buffer, userId: string, normalisedCode: string): Buffer {
  return createHmac('sha256', key).update(`${userId}:${normalisedCode}`).digest()
}
