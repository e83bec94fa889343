/**
 * Access tokens (short-lived JWTs through fast-jwt, synchronous, never on libuv's pool), signed
 * with the key ring's key named by `kid` (published at /.well-known/jwks.json) or an HS256 secret;
 * and refresh tokens (opaque random strings, only their SHA-256 stored).
 */
import { hash, randomBytes, randomUUID } from 'node:crypto'
import { createSigner, createVerifier } from 'fast-jwt'
import { createError } from '../errors.js'
import type { KeyRing, RingKey } from '../keys/index.js'

/** Who issues access tokens (`iss`), and the API they are for (`aud`): other verifiers check both. */
const accessTokenIssuer = 'tollbooth'
const accessTokenAudience = 'tollbooth-api'
/** How far ahead of this clock a token's `iat` may be (another replica's clock running fast). */
const maxClockSkewSeconds = 60
/** User ids and session ids are PostgreSQL uuids; anything else would fail the database cast (a 500). */
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const requiredClaims = ['exp', 'iat', 'iss', 'sub', 'aud', 'sid']

/** What a verified access token says: whose it is, which session it belongs to, how its session signed in (`amr`, RFC 8176). */
export interface AccessClaims {
  userId: string
  sessionId: string
  amr: string[]
}

export interface AccessTokens {
  /** `amr`: the session's authentication methods (`pwd`, `otp`, `mfa`, ...; sessions.amr). */
  sign (userId: string, sessionId: string, amr: readonly string[]): string
  /** The token's user and session ids; throws AUTH_TOKEN_INVALID. A promise only when its `kid` is unknown (the ring reloads). */
  verify (token: string): AccessClaims | Promise<AccessClaims>
  ttlSeconds: number
}

/**
 * A verified token's claims, checked further: `sub` and `sid` uuids, `aud` exactly ours (not a
 * list), `iat` not past the skew, a lifetime no longer than ours. AUTH_TOKEN_INVALID for any other.
 */
function verifiedClaims (verifier: (token: string) => unknown, token: string, ttlSeconds: number): AccessClaims {
  let payload: unknown
  try {
    payload = verifier(token)
  } catch (err) {
    throw createError('AUTH_TOKEN_INVALID', undefined, { cause: err })
  }
  const { sub, sid, aud, iat, exp, amr } = payload as { sub?: unknown, sid?: unknown, aud?: unknown, iat?: unknown, exp?: unknown, amr?: unknown }
  // Signed by us but not naming a user id we issue (a leaked key, a token of another service).
  if (typeof sub !== 'string' || !uuidPattern.test(sub)) throw createError('AUTH_TOKEN_INVALID')
  if (typeof sid !== 'string' || !uuidPattern.test(sid)) throw createError('AUTH_TOKEN_INVALID')
  if (aud !== accessTokenAudience) throw createError('AUTH_TOKEN_INVALID')
  if (typeof iat !== 'number' || typeof exp !== 'number' || !Number.isFinite(iat) || !Number.isFinite(exp)) throw createError('AUTH_TOKEN_INVALID')
  if (iat > Date.now() / 1000 + maxClockSkewSeconds) throw createError('AUTH_TOKEN_INVALID')
  if (exp - iat > ttlSeconds) throw createError('AUTH_TOKEN_INVALID')
  return { userId: sub, sessionId: sid, amr: Array.isArray(amr) ? amr.filter((method): method is string => typeof method === 'string') : [] }
}

/** fast-jwt checks these (its cache keeps a verified payload until its exp); verifiedClaims checks the rest every time. */
const verifierOptions = { allowedIss: accessTokenIssuer, allowedAud: accessTokenAudience, requiredClaims, cache: 1000 }

function signerOptions (ttlSeconds: number): { expiresIn: number, iss: string, aud: string } {
  return { expiresIn: ttlSeconds * 1000, iss: accessTokenIssuer, aud: accessTokenAudience }
}

export function createAccessTokens (secret: string, ttlSeconds: number): AccessTokens {
  const signer = createSigner({ key: secret, algorithm: 'HS256', ...signerOptions(ttlSeconds) })
  const verifier = createVerifier({ key: secret, algorithms: ['HS256'], ...verifierOptions })
  return {
    ttlSeconds,
    sign: (userId, sessionId, amr) => signer({ sub: userId, sid: sessionId, amr: [...amr] }),
    verify: (token) => verifiedClaims(verifier, token, ttlSeconds),
  }
}

/** JSON text that may be an object: whitespace, then `{` (RFC 8259). */
const jsonObjectStart = /^[\t\n\r ]*\{/

/**
 * The `kid` of a compact JWS's header; undefined when there is none. A header that cannot be a
 * JSON object is refused before `JSON.parse`, whose SyntaxError would make garbage cost more.
 */
function tokenKid (token: string): string | undefined {
  const end = token.indexOf('.')
  if (end <= 0 || end > 1024) return undefined
  const text = Buffer.from(token.slice(0, end), 'base64url').toString('utf8')
  if (!jsonObjectStart.test(text)) return undefined
  try {
    const header: unknown = JSON.parse(text)
    const kid = (header as { kid?: unknown } | null)?.kid
    return typeof kid === 'string' ? kid : undefined
  } catch {
    return undefined
  }
}

type Signer = (payload: { sub: string, sid: string, amr: string[] }) => string
type Verifier = (token: string) => unknown

/**
 * Access tokens signed by the key ring's key. Verification picks the key by `kid` and accepts its
 * algorithm alone (so `alg: none`, or HS256 keyed with the public key, never passes).
 */
export function createSignedAccessTokens (ring: KeyRing, ttlSeconds: number): AccessTokens {
  const signers = new WeakMap<RingKey, Signer>()
  const verifiers = new WeakMap<RingKey, Verifier>()
  const verifyWith = (key: RingKey, token: string): AccessClaims => {
    let verifier = verifiers.get(key)
    if (verifier === undefined) {
      verifier = createVerifier({ key: key.publicPem, algorithms: [key.alg], ...verifierOptions })
      verifiers.set(key, verifier)
    }
    return verifiedClaims(verifier, token, ttlSeconds)
  }
  return {
    ttlSeconds,
    sign (userId, sessionId, amr) {
      const key = ring.signing
      let signer = signers.get(key)
      if (signer === undefined) {
        if (key.privatePem === undefined) throw createError('SIGNING_KEY_UNREADABLE', `signing key ${key.kid} has no private key`)
        signer = createSigner({ key: key.privatePem, algorithm: key.alg, kid: key.kid, ...signerOptions(ttlSeconds) })
        signers.set(key, signer)
      }
      return signer({ sub: userId, sid: sessionId, amr: [...amr] })
    },
    verify (token) {
      const kid = tokenKid(token)
      if (kid === undefined) throw createError('AUTH_TOKEN_INVALID')
      const key = ring.find(kid)
      if (key !== undefined) return verifyWith(key, token)
      return ring.reloadForUnknownKid(kid).then((known) => {
        const reloaded = known ? ring.find(kid) : undefined
        if (reloaded === undefined) throw createError('AUTH_TOKEN_INVALID')
        return verifyWith(reloaded, token)
      })
    },
  }
}

export interface NewRefreshToken {
  token: string
  tokenHash: Buffer
}

export function newRefreshToken (): NewRefreshToken {
  const token = randomToken()
  return { token, tokenHash: hashRefreshToken(token) }
}

/** The form a refresh token is kept in (`secretTokenHash`). */
export function hashRefreshToken (token: string): Buffer {
  return secretTokenHash(token)
}

/** 32 bytes from the CSPRNG, base64url (43 characters); synchronous randomBytes, no libuv pool round trip. */
export function randomToken (): string {
  return randomBytes(32).toString('base64url')
}

/**
 * How a random token is kept server-side. SHA-256 is right here: the token has 256 bits of entropy,
 * so no slow hash is needed. One-shot `hash()`: no Hash object, whose native half every young-space
 * GC would have to finalise (a sign-in hashes several tokens).
 */
export function secretTokenHash (token: string): Buffer {
  return hash('sha256', token, 'buffer')
}

export function newTokenFamily (): string {
  return randomUUID()
}
