/**
 * Asymmetric signing keys for access tokens: Ed25519 (EdDSA, the default) or P-256 (ES256).
 * Key generation and signing are synchronous node:crypto calls (microseconds), never on
 * libuv's thread pool. A key's id is its RFC 7638 JWK thumbprint, so replicas given the same
 * key file agree on it without talking to each other.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { createError } from '../errors.js'

export type SigningAlgorithm = 'EdDSA' | 'ES256'

/** The public members of a JWK as published (RFC 7517 section 4, RFC 8037 for OKP). */
export interface PublicJwk {
  kty: 'OKP' | 'EC'
  crv: 'Ed25519' | 'P-256'
  x: string
  y?: string
  kid: string
  alg: SigningAlgorithm
  use: 'sig'
}

export interface SigningKeyPair {
  kid: string
  alg: SigningAlgorithm
  publicJwk: PublicJwk
  privateKey: KeyObject
}

/** RFC 7638: SHA-256 of the required members in lexicographic order, base64url. */
function jwkThumbprint (jwk: { kty: string, crv: string, x: string, y?: string }): string {
  const canonical = jwk.kty === 'EC'
    ? JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })
    : JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x })
  return createHash('sha256').update(canonical).digest('base64url')
}

/** The algorithm a key type signs with; throws CONFIG_INVALID for any other key. */
export function algorithmOf (key: KeyObject): SigningAlgorithm {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA'
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256'
  throw createError('CONFIG_INVALID', `signing keys must be Ed25519 (EdDSA) or P-256 (ES256), not ${key.asymmetricKeyType ?? 'unknown'}${key.asymmetricKeyDetails?.namedCurve === undefined ? '' : ` ${key.asymmetricKeyDetails.namedCurve}`}`)
}

export function publicJwkOf (publicKey: KeyObject): PublicJwk {
  const alg = algorithmOf(publicKey)
  const exported = publicKey.export({ format: 'jwk' }) as { kty: 'OKP' | 'EC', crv: 'Ed25519' | 'P-256', x: string, y?: string }
  const members = { kty: exported.kty, crv: exported.crv, x: exported.x, ...(exported.y === undefined ? {} : { y: exported.y }) }
  return { ...members, kid: jwkThumbprint(members), alg, use: 'sig' }
}

function keyPairOf (privateKey: KeyObject): SigningKeyPair {
  const publicJwk = publicJwkOf(createPublicKey(privateKey))
  return { kid: publicJwk.kid, alg: publicJwk.alg, publicJwk, privateKey }
}

export function generateSigningKey (alg: SigningAlgorithm): SigningKeyPair {
  const { privateKey } = alg === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' })
  return keyPairOf(privateKey)
}

/** A PEM file's key: a private key (signs and verifies) or a public one (verifies only). */
export function keyFromPem (pem: string, source: string): { privateKey?: KeyObject, publicKey: KeyObject } {
  try {
    if (/-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/.test(pem)) {
      const privateKey = createPrivateKey(pem)
      return { privateKey, publicKey: createPublicKey(privateKey) }
    }
    return { publicKey: createPublicKey(pem) }
  } catch (err) {
    throw createError('CONFIG_INVALID', `${source} does not hold a PEM key (PKCS#8 private key or SPKI public key)`, { cause: err })
  }
}

export function privateKeyPem (key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }) as string
}

export function publicKeyPem (jwk: PublicJwk): string {
  return createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, ...(jwk.y === undefined ? {} : { y: jwk.y }) }, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string
}
