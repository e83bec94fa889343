/**
 * Access tokens (short-lived HS256 JWTs, fast-jwt: synchronous node:crypto HMAC,
 * so signing never queues on libuv's pool) and refresh tokens (opaque random
 * strings; only their SHA-256 is stored).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { createSigner, createVerifier } from 'fast-jwt'
import { createError } from '../errors.js'

const issuer = 'tollbooth'
/** User ids are PostgreSQL uuids; anything else in `sub` would fail the database cast (a 500). */
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export interface AccessTokens {
  sign (userId: string): string
  /** Returns the user id (a uuid); throws AUTH_TOKEN_INVALID. */
  verify (token: string): string
  ttlSeconds: number
}

export function createAccessTokens (secret: string, ttlSeconds: number): AccessTokens {
  const signer = createSigner({ key: secret, algorithm: 'HS256', expiresIn: ttlSeconds * 1000, iss: issuer })
  const verifier = createVerifier({ key: secret, algorithms: ['HS256'], allowedIss: issuer, cache: 1000 })
  return {
    ttlSeconds,
    sign: (userId) => signer({ sub: userId }),
    verify (token) {
      let payload: unknown
      try {
        payload = verifier(token)
      } catch (err) {
        throw createError('AUTH_TOKEN_INVALID', undefined, { cause: err })
      }
      const sub = (payload as { sub?: unknown }).sub
      // Signed by us but not naming a user id we issue (a leaked key, a token of another service).
      if (typeof sub !== 'string' || !uuidPattern.test(sub)) throw createError('AUTH_TOKEN_INVALID')
      return sub
    },
  }
}

export interface NewRefreshToken {
  token: string
  tokenHash: Buffer
}

export function newRefreshToken (): NewRefreshToken {
  // Synchronous randomBytes: 32 bytes from the CSPRNG, no libuv pool round trip.
  const token = randomBytes(32).toString('base64url')
  return { token, tokenHash: hashRefreshToken(token) }
}

/** SHA-256 is right here: the token has 256 bits of entropy, so no slow hash is needed. */
export function hashRefreshToken (token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

export function newTokenFamily (): string {
  return randomUUID()
}
