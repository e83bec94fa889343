/**
 * The key-encryption key (KEK) that seals secrets kept in PostgreSQL (signing keys, TOTP secrets):
 * the setting (or its _FILE, read by loadConfig), or, in development on the embedded database,
 * one generated once into the data folder. Read once, never logged.
 */
import type { Config } from '../config/index.js'
import { parseKeyEncryptionKey, persistedKeyEncryptionKey, type RingLog } from '../keys/index.js'

/** The KEK, or undefined with DATABASE_URL and none set (loadConfig refuses that where signing keys need one). */
export function openKeyEncryptionKey (config: Config, log: RingLog): Buffer | undefined {
  if (config.keyEncryptionKey !== undefined) return parseKeyEncryptionKey(config.keyEncryptionKey, 'TOLLBOOTH_KEY_ENCRYPTION_KEY')
  // With DATABASE_URL nothing is written to the data folder (the image runs read-only); a cluster
  // of the embedded database gets its primary's key in its config (process/cluster.ts).
  if (config.databaseUrl !== undefined) return undefined
  return dataFolderKeyEncryptionKey(config.dataDir, log)
}

/** Development on the embedded database: the key kept in the data folder, made once (mode 600) and logged when made. */
export function dataFolderKeyEncryptionKey (dataDir: string, log: RingLog): Buffer {
  const persisted = persistedKeyEncryptionKey(dataDir)
  if (persisted.created) log.warn({ file: persisted.file }, 'no TOLLBOOTH_KEY_ENCRYPTION_KEY set; generated one into the data folder (mode 600) to seal the signing keys and TOTP secrets. Fine for development; in production set TOLLBOOTH_KEY_ENCRYPTION_KEY (or _FILE) on every replica.')
  return persisted.key
}

/** The KEK made once, on first use: a service that never seals a secret creates no key file. */
export function lazyKeyEncryptionKey (config: Config, log: RingLog): () => Buffer | undefined {
  let opened: { key: Buffer | undefined } | undefined
  return () => {
    opened ??= { key: openKeyEncryptionKey(config, log) }
    return opened.key
  }
}
