/**
 * A registered client as oidc-provider reads it. The secret is never stored: `client_secret`
 * carries the SHA-256 of it, and the provider's comparison (client-secret.ts) hashes what the
 * client presents. The secret is never a key either: no HS256 anywhere (provider.ts).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { StoredOidcClient } from '../db/index.js'

/** The client metadata member that tells a first-party client (its consent is not asked). */
export const firstPartyMember = 'tollbooth_first_party'

export function clientMetadata (stored: StoredOidcClient): Record<string, unknown> {
  return {
    ...stored.metadata,
    client_id: stored.clientId,
    ...(stored.secretHash === null ? {} : { client_secret: stored.secretHash.toString('hex') }),
    [firstPartyMember]: stored.firstParty,
  }
}

/** 128 random bits, base64url: the id of a client registered without one (`clients add`, dynamic registration). */
export function newClientId (): string {
  return randomBytes(16).toString('base64url')
}

/** 256 random bits, base64url: what `tollbooth clients add` prints once. */
export function newClientSecret (): { secret: string, hash: Buffer } {
  const secret = randomBytes(32).toString('base64url')
  return { secret, hash: clientSecretHash(secret) }
}

export function clientSecretHash (secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest()
}

/** Constant time: the presented secret's SHA-256 against the stored one (hex). */
export function clientSecretMatches (storedHashHex: string | undefined, presented: string): boolean {
  if (storedHashHex === undefined || !/^[0-9a-f]{64}$/.test(storedHashHex)) return false
  return timingSafeEqual(Buffer.from(storedHashHex, 'hex'), clientSecretHash(presented))
}
