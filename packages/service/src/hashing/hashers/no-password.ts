/**
 * An account imported without a password (its owner sets one through the reset link the import
 * mails): the stored value `!` matches no password. Verified on a worker thread like any other
 * hash, so a login to it takes the time a wrong password takes (the engine pads a mismatch of an
 * outdated hash to the policy's verify time) and is answered the same.
 */
import { foreignFormatUnknown, type ForeignVerifier } from './foreign.js'

/** What the users row holds for an account with no password. */
export const noPasswordHash = '!'

export const noPasswordVerifier: ForeignVerifier = {
  algorithm: 'no-password',
  understands: (stored) => stored.startsWith('!'),
  inspect (stored) {
    if (stored !== noPasswordHash) throw foreignFormatUnknown('an account without a password is stored as "!" alone')
    return { algorithm: 'foreign', format: 'no-password', memoryBytes: 0 }
  },
  verifySync: () => false,
}
