/**
 * The tokens in account mails' links: 32 random bytes, base64url in the link; only their SHA-256
 * is ever stored (256 random bits need no slow hash). A token exists only from its send on: until
 * then its rows hold a random stand-in for the hash, which no token anyone holds hashes to.
 */
import { hash, randomBytes } from 'node:crypto'

const tokenBytes = 32

export interface LinkToken {
  token: string
  tokenHash: Buffer
}

export function newLinkToken (): LinkToken {
  const token = randomBytes(tokenBytes).toString('base64url')
  return { token, tokenHash: hashLinkToken(token) }
}

export function hashLinkToken (token: string): Buffer {
  return hash('sha256', token, 'buffer')
}

/** What a token's row and its mail's row hold for its hash until the send makes the token. */
export function tokenStandIn (): Buffer {
  return randomBytes(tokenBytes)
}
