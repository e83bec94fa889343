/**
 * bcrypt through @node-rs/bcrypt's synchronous functions (worker threads only).
 *
 * bcrypt reads at most 72 bytes of its input and the library silently drops the
 * rest, so two passwords sharing their first 72 bytes would verify as equal. We
 * never let that happen: hashing a longer password throws `PASSWORD_TOO_LONG`,
 * and verifying one returns false.
 */
import { hashSync, verifySync } from '@node-rs/bcrypt'
import { createError } from '../../errors.js'
import type { Hasher } from './hasher.js'
import type { BcryptParams } from '../types.js'

export const bcryptMaxPasswordBytes = 72

export function bcryptPasswordTooLong (password: string): boolean {
  return Buffer.byteLength(password, 'utf8') > bcryptMaxPasswordBytes
}

export const bcryptHasher: Hasher<BcryptParams> = {
  algorithm: 'bcrypt',
  understands: (stored) => /^\$2[aby]\$/.test(stored),
  hashSync (password, params) {
    if (bcryptPasswordTooLong(password)) {
      throw createError('PASSWORD_TOO_LONG', `bcrypt accepts at most ${bcryptMaxPasswordBytes} UTF-8 bytes`)
    }
    return hashSync(password, params.cost)
  },
  verifySync (password, stored) {
    if (bcryptPasswordTooLong(password)) {
      // Spend the same work as a real verify, so the answer's timing does not tell
      // "this account exists and has a bcrypt hash" apart from a dummy verify; then refuse.
      verifySync(Buffer.from(password, 'utf8').subarray(0, bcryptMaxPasswordBytes), stored)
      return false
    }
    return verifySync(password, stored)
  },
}
