/**
 * The access-token signer the config asks for: HS256 with the shared secret, or EdDSA/ES256
 * with the key ring, whose keys come from PEM files or from PostgreSQL (sealed under the
 * key-encryption key). Key material is read here, once, and never logged.
 */
import type pg from 'pg'
import type { Config } from '../config/index.js'
import { createError } from '../errors.js'
import { DatabaseKeySource, FileKeySource, KeyRing, type KeySource, type RingLog } from '../keys/index.js'
import { openKeyEncryptionKey } from './key-encryption-key.js'
import { createAccessTokens, createSignedAccessTokens, type AccessTokens } from './tokens.js'

export interface OpenAccessTokensOptions {
  config: Config
  db: pg.Pool
  /** The HS256 secret (TOLLBOOTH_JWT_SECRET or the data folder's); unused by EdDSA and ES256. */
  jwtSecret: string | undefined
  log: RingLog
  /** Wall clock, epoch ms: when keys activate and expire (tests move it). */
  now: () => number
  /** The key-encryption key (key-encryption-key.ts), shared with the TOTP secrets; default: opened here. */
  keyEncryptionKey?: () => Buffer | undefined
}

export interface OpenedAccessTokens {
  accessTokens: AccessTokens
  /** Undefined with HS256: nothing to publish. */
  keyRing: KeyRing | undefined
}

/** loadConfig refuses DATABASE_URL without a KEK where signing keys live in the database; the embedded database has its data folder's. */
function requiredKeyEncryptionKey (key: () => Buffer | undefined): Buffer {
  const opened = key()
  if (opened === undefined) throw createError('CONFIG_INVALID', 'TOLLBOOTH_KEY_ENCRYPTION_KEY is required to keep signing keys in the database', { field: 'TOLLBOOTH_KEY_ENCRYPTION_KEY' })
  return opened
}

export async function openAccessTokens (options: OpenAccessTokensOptions): Promise<OpenedAccessTokens> {
  const { config, db, log, now } = options
  if (config.jwtAlgorithm === 'HS256') {
    if (options.jwtSecret === undefined) throw createError('CONFIG_INVALID', 'TOLLBOOTH_JWT_SECRET is required with TOLLBOOTH_JWT_ALGORITHM=HS256')
    return { accessTokens: createAccessTokens(options.jwtSecret, config.accessTokenTtlSeconds), keyRing: undefined }
  }
  const alg = config.jwtAlgorithm
  let source: KeySource
  if (config.signingKeyFile !== undefined) {
    const verificationFiles = (config.verificationKeyFiles ?? '').split(',').map((file) => file.trim()).filter((file) => file.length > 0)
    source = new FileKeySource(config.signingKeyFile, verificationFiles, alg)
  } else {
    source = new DatabaseKeySource({
      db,
      keyEncryptionKey: requiredKeyEncryptionKey(options.keyEncryptionKey ?? (() => openKeyEncryptionKey(config, log))),
      rotation: {
        alg,
        rotationMs: config.signingKeyRotationSeconds * 1000,
        // Every replica reloads, and every verifier's cached JWK Set expires, before the key signs.
        publishAheadMs: (config.signingKeyReloadSeconds + config.jwksMaxAgeSeconds) * 1000,
      },
      accessTokenTtlMs: config.accessTokenTtlSeconds * 1000,
      now,
      log,
    })
  }
  const keyRing = await KeyRing.open(source, { reloadIntervalMs: config.signingKeyReloadSeconds * 1000, log })
  log.info({ kid: keyRing.signing.kid, alg, keys: keyRing.verifying.length, from: config.signingKeyFile === undefined ? 'database' : 'file' }, 'access tokens: signing key ready')
  return { accessTokens: createSignedAccessTokens(keyRing, config.accessTokenTtlSeconds), keyRing }
}
