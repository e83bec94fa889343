/**
 * Secrets at rest (private signing keys, TOTP secrets): AES-256-GCM under the key-encryption key
 * (KEK) from TOLLBOOTH_KEY_ENCRYPTION_KEY or TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE. What the secret
 * belongs to (a key id, a user id) is the additional authenticated data, so a sealed secret
 * copied onto another row does not open.
 * Layout: version (1 byte) | nonce (12) | tag (16) | ciphertext.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { createError } from '../errors.js'
import { generateSigningKey, type PublicJwk, type SigningAlgorithm } from './signing-key.js'

const version = 1
const nonceBytes = 12
const tagBytes = 16
const keyEncryptionKeyBytes = 32

/**
 * A KEK as written in the environment or a file: 32 bytes as 64 hex digits or as base64
 * (or base64url). Anything else is refused, never stretched: a passphrase is not a key.
 */
export function parseKeyEncryptionKey (text: string, source: string): Buffer {
  const trimmed = text.trim()
  const key = /^[0-9a-f]{64}$/i.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed) ? Buffer.from(trimmed.replace(/[+/]/g, (c) => (c === '+' ? '-' : '_')), 'base64url') : undefined
  if (key?.length !== keyEncryptionKeyBytes) {
    throw createError('CONFIG_INVALID', `${source} must be 32 random bytes as 64 hex digits or base64 (for instance: openssl rand -base64 32)`, { field: source })
  }
  return key
}

/** `plaintext` sealed under `kek`, bound to `owner` (the additional authenticated data). */
export function sealSecret (kek: Buffer, owner: string, plaintext: Buffer): Buffer {
  const nonce = randomBytes(nonceBytes)
  const cipher = createCipheriv('aes-256-gcm', kek, nonce)
  cipher.setAAD(Buffer.from(owner, 'utf8'))
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([Buffer.from([version]), nonce, cipher.getAuthTag(), ciphertext])
}

/** What `sealSecret` sealed for `owner`; undefined under another KEK, for another owner, when altered or of an unknown format. */
export function openSecret (kek: Buffer, owner: string, sealed: Buffer): Buffer | undefined {
  if (sealed.length <= 1 + nonceBytes + tagBytes || sealed[0] !== version) return undefined
  try {
    const decipher = createDecipheriv('aes-256-gcm', kek, sealed.subarray(1, 1 + nonceBytes))
    decipher.setAAD(Buffer.from(owner, 'utf8'))
    decipher.setAuthTag(sealed.subarray(1 + nonceBytes, 1 + nonceBytes + tagBytes))
    return Buffer.concat([decipher.update(sealed.subarray(1 + nonceBytes + tagBytes)), decipher.final()])
  } catch {
    return undefined
  }
}

/** A new key pair as the table keeps it: the public half as a JWK, the private half sealed under `kek`. */
export function newSealedKey (kek: Buffer, alg: SigningAlgorithm, createdAtMs: number, activatesAtMs: number): { kid: string, alg: SigningAlgorithm, publicJwk: PublicJwk, privateKeySealed: Buffer, createdAtMs: number, activatesAtMs: number } {
  const pair = generateSigningKey(alg)
  const der = pair.privateKey.export({ type: 'pkcs8', format: 'der' })
  return { kid: pair.kid, alg: pair.alg, publicJwk: pair.publicJwk, privateKeySealed: sealSecret(kek, pair.kid, der), createdAtMs, activatesAtMs }
}

/** The PKCS#8 DER sealed for this kid; throws SIGNING_KEY_UNREADABLE under another KEK or when altered. */
export function openPrivateKey (kek: Buffer, kid: string, sealed: Buffer): Buffer {
  if (sealed.length <= 1 + nonceBytes + tagBytes || sealed[0] !== version) {
    throw createError('SIGNING_KEY_UNREADABLE', `signing key ${kid}: unknown sealed format`)
  }
  const opened = openSecret(kek, kid, sealed)
  if (opened === undefined) throw createError('SIGNING_KEY_UNREADABLE', `signing key ${kid} does not open with the configured key-encryption key (another TOLLBOOTH_KEY_ENCRYPTION_KEY sealed it)`)
  return opened
}

const persistedKeyEncryptionKeyFile = 'key-encryption-key'

/**
 * Development only (embedded database, no KEK set): the KEK kept in the data folder, mode 0600,
 * created by link(2) from a private temporary file, so processes starting together share the winner's.
 */
export function persistedKeyEncryptionKey (dataDir: string): { key: Buffer, file: string, created: boolean } {
  const file = path.join(dataDir, persistedKeyEncryptionKeyFile)
  const read = (): Buffer => parseKeyEncryptionKey(fs.readFileSync(file, 'utf8'), file)
  if (fs.existsSync(file)) return { key: read(), file, created: false }
  fs.mkdirSync(dataDir, { recursive: true })
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`
  fs.writeFileSync(temporary, randomBytes(keyEncryptionKeyBytes).toString('base64') + '\n', { mode: 0o600, flag: 'wx' })
  try {
    fs.linkSync(temporary, file)
    return { key: read(), file, created: true }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    return { key: read(), file, created: false }
  } finally {
    fs.rmSync(temporary, { force: true })
  }
}

/** The KEK `persistedKeyEncryptionKey` keeps in the data folder, for another process of the same folder; never creates one. */
export function readPersistedKeyEncryptionKey (dataDir: string): { key: Buffer, file: string } | undefined {
  const file = path.join(dataDir, persistedKeyEncryptionKeyFile)
  if (!fs.existsSync(file)) return undefined
  return { key: parseKeyEncryptionKey(fs.readFileSync(file, 'utf8'), file), file }
}
