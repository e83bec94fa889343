/**
 * The access-token signer the config asks for: HS256 with the shared secret, or EdDSA/ES256
 * with the key ring, whose keys come from PEM files or from PostgreSQL (sealed under the
 * key-encryption key). Key material is read here, once, and never logged.
 */
import type pg from 'pg'
import type { Config } from '../config/index.js'
import { createError } from '../errors.js'
import { DatabaseKeySource, FileKeySource, KeyRing, type KeySource, type RingLog, parseKeyEncryptionKey, persistedKeyEncryptionKey } from '../keys/index.js'
import { createAccessTokens, createSignedAccessTokens, type AccessTokens } from './tokens.js'

export interface OpenAccessTokensOptions {
  config: Config
  db: pg.Pool
  /** The HS256 secret (TOLLBOOTH_JWT_SECRET or the data folder's); unused by EdDSA and ES256. */
  jwtSecret: string | undefined
  log: RingLog
  /** Wall clock, epoch ms: when keys activate and expire (tests move it). */
  now: () => number
}

export interface OpenedAccessTokens {
  accessTokens: AccessTokens
  /** Undefined with HS256: nothing to publish. */
  keyRing: KeyRing | undefined
}

/** The KEK from the setting (or its _FILE, read by loadConfig), or (development, the embedded database) the data folder. */
function keyEncryptionKey (config: Config, log: RingLog): Buffer {
  if (config.keyEncryptionKey !== undefined) return parseKeyEncryptionKey(config.keyEncryptionKey, 'TOLLBOOTH_KEY_ENCRYPTION_KEY')
  // loadConfig refuses DATABASE_URL without a KEK; here is the embedded database (or a
  // cluster worker of it, which shares the data folder).
  const persisted = persistedKeyEncryptionKey(config.dataDir)
  if (persisted.created) log.warn({ file: persisted.file }, 'access tokens: no TOLLBOOTH_KEY_ENCRYPTION_KEY set; generated one into the data folder (mode 600) to seal the signing keys. Fine for development; in production set TOLLBOOTH_KEY_ENCRYPTION_KEY (or _FILE) on every replica.')
  return persisted.key
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
      keyEncryptionKey: keyEncryptionKey(config, log),
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
