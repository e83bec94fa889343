/**
 * PBKDF2-HMAC-SHA256 and -SHA512 (Django, passlib, Keycloak, many others), verify only, through
 * node:crypto's `pbkdf2Sync` in a worker thread (the async one would run on libuv's shared pool).
 * One canonical spelling, which the import writes from Django's, passlib's and PHC's:
 * `$pbkdf2-sha256$i=<iterations>,l=<hash bytes>$<salt>$<hash>`, unpadded standard base64.
 */
import { pbkdf2Sync, timingSafeEqual } from 'node:crypto'
import { checkForeignBound, decodeCanonicalB64, encodeUnpaddedB64, foreignFormatUnknown, parseCanonicalParams, type ForeignBound, type ForeignStoredHash, type ForeignVerifier } from './foreign.js'

export type Pbkdf2Digest = 'sha256' | 'sha512'

export interface ParsedPbkdf2 {
  digest: Pbkdf2Digest
  iterations: number
  salt: Buffer
  hash: Buffer
}

const digestBytes: Record<Pbkdf2Digest, number> = { sha256: 32, sha512: 64 }

/**
 * PBKDF2 runs its iterations once per output block, so the work is iterations × blocks (a 64-byte
 * SHA-256 key, as Keycloak writes, costs twice a 32-byte one).
 */
export const pbkdf2Limits = {
  work: {
    sha256: { min: 1, max: 2_000_000, reason: 'iterations × output blocks; 2,000,000 SHA-256 iterations hold a thread about a second (Django writes 1,000,000, OWASP asks 600,000)' },
    sha512: { min: 1, max: 1_000_000, reason: 'iterations × output blocks; 1,000,000 SHA-512 iterations hold a thread about 1.5 s (OWASP asks 210,000, as Keycloak writes)' },
  },
  saltBytes: { min: 1, max: 128, reason: 'more than 128 bytes is not a salt a sane tool made' },
  hashBytes: { min: 16, max: 128, reason: 'shorter tags are too weak to trust; longer ones add work and no security' },
} as const satisfies { work: Record<Pbkdf2Digest, ForeignBound>, saltBytes: ForeignBound, hashBytes: ForeignBound }

const pattern = /^\$pbkdf2-(sha256|sha512)\$([^$]*)\$([^$]*)\$([^$]*)$/

function parsePbkdf2 (stored: string): ParsedPbkdf2 {
  const match = pattern.exec(stored)
  if (match === null) throw foreignFormatUnknown('not a $pbkdf2-sha256$ or $pbkdf2-sha512$ string')
  const [, digest, paramText, saltText, hashText] = match as unknown as [string, Pbkdf2Digest, string, string, string]
  const { i, l } = parseCanonicalParams(paramText, ['i', 'l'] as const)
  const hash = decodeCanonicalB64(hashText, 'hash')
  if (hash.length !== l) throw foreignFormatUnknown('the hash length l does not match the hash')
  return { digest, iterations: i, salt: decodeCanonicalB64(saltText, 'salt'), hash }
}

export function formatPbkdf2 (parsed: ParsedPbkdf2): string {
  return `$pbkdf2-${parsed.digest}$i=${parsed.iterations},l=${parsed.hash.length}$${encodeUnpaddedB64(parsed.salt)}$${encodeUnpaddedB64(parsed.hash)}`
}

function inspect (stored: string): ForeignStoredHash {
  const parsed = parsePbkdf2(stored)
  checkForeignBound(parsed.salt.length, 'PBKDF2 salt length in bytes', pbkdf2Limits.saltBytes)
  checkForeignBound(parsed.hash.length, 'PBKDF2 hash length in bytes', pbkdf2Limits.hashBytes)
  checkForeignBound(parsed.iterations, `PBKDF2-${parsed.digest.toUpperCase()} iterations`, { ...pbkdf2Limits.work[parsed.digest], min: 1 })
  const blocks = Math.ceil(parsed.hash.length / digestBytes[parsed.digest])
  checkForeignBound(parsed.iterations * blocks, `PBKDF2-${parsed.digest.toUpperCase()} work (iterations × ${blocks} output blocks)`, pbkdf2Limits.work[parsed.digest])
  return { algorithm: 'foreign', format: `pbkdf2-${parsed.digest}`, memoryBytes: 0 }
}

function verifier (digest: Pbkdf2Digest): ForeignVerifier {
  const prefix = `$pbkdf2-${digest}$`
  return {
    algorithm: `pbkdf2-${digest}`,
    understands: (stored) => stored.startsWith(prefix),
    inspect,
    verifySync (password, stored) {
      const { iterations, salt, hash } = parsePbkdf2(stored)
      return timingSafeEqual(pbkdf2Sync(password, salt, iterations, hash.length, digest), hash)
    },
  }
}

export const pbkdf2Sha256Verifier = verifier('sha256')
export const pbkdf2Sha512Verifier = verifier('sha512')
