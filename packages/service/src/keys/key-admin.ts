/**
 * What `tollbooth keys` does to the stored keys: list them, create the next one, retire one. Each
 * change is decided under the table's lock and notified with its transaction (db/signing-keys.ts),
 * so every replica listening reloads as it commits. A key is created only once the key-encryption
 * key given has opened a stored one: a key sealed under another KEK would not open on the replicas.
 */
import type pg from 'pg'
import { changeSigningKeys, listSigningKeys, type StoredSigningKey } from '../db/index.js'
import { keySchedule } from './schedule.js'
import { newSealedKey, openPrivateKey } from './sealing.js'
import type { PublicJwk, SigningAlgorithm } from './signing-key.js'

/**
 * signing: signs now. published: announced ahead, signs from `activatesAtMs`. verifying: replaced,
 * its tokens still verify until they expire. expired: its tokens have expired, out of the JWK Set.
 * retired: neither signs nor verifies.
 */
type KeyState = 'signing' | 'published' | 'verifying' | 'expired' | 'retired'

export interface ListedKey {
  kid: string
  alg: SigningAlgorithm
  createdAtMs: number
  activatesAtMs: number
  retiredAtMs: number | undefined
  state: KeyState
}

export interface KeyAdminOptions {
  db: pg.Pool
  accessTokenTtlMs: number
  /** Wall clock, epoch ms. */
  now: () => number
}

export interface KeyCreation {
  keyEncryptionKey: Buffer
  alg: SigningAlgorithm
}

type Stored = StoredSigningKey<SigningAlgorithm, PublicJwk>

function listed (keys: readonly Stored[], nowMs: number, accessTokenTtlMs: number): ListedKey[] {
  const { signing, verifying } = keySchedule(keys, nowMs, accessTokenTtlMs)
  const verifies = new Set(verifying.map((key) => key.kid))
  return keys.map((key) => {
    let state: KeyState = 'expired'
    if (key.retiredAtMs !== undefined) state = 'retired'
    else if (key.kid === signing?.kid) state = 'signing'
    else if (verifies.has(key.kid)) state = key.activatesAtMs > nowMs ? 'published' : 'verifying'
    return { kid: key.kid, alg: key.alg, createdAtMs: key.createdAtMs, activatesAtMs: key.activatesAtMs, retiredAtMs: key.retiredAtMs, state }
  })
}

/** Every stored key, oldest activation first, with its state now. */
export async function listKeys (options: KeyAdminOptions): Promise<ListedKey[]> {
  return listed(await listSigningKeys<SigningAlgorithm, PublicJwk>(options.db), options.now(), options.accessTokenTtlMs)
}

/** Throws SIGNING_KEY_UNREADABLE unless `kek` opens a live key (the one signing, if any); nothing to check with none. */
function checkKeyEncryptionKey (keys: readonly Stored[], nowMs: number, kek: Buffer): void {
  const candidate = keySchedule(keys, nowMs, 0).signing ?? keys.find((key) => key.retiredAtMs === undefined)
  if (candidate !== undefined) openPrivateKey(kek, candidate.kid, candidate.privateKeySealed)
}

/**
 * Creates the next key now: it signs from `activatesAtMs` (now, or after the publication delay the
 * caller chose). Returns it as listed right after.
 */
export async function rotateKey (options: KeyAdminOptions, creation: KeyCreation, delayMs: number): Promise<ListedKey> {
  const nowMs = options.now()
  const change = await changeSigningKeys<SigningAlgorithm, PublicJwk>(options.db, (keys) => {
    checkKeyEncryptionKey(keys, nowMs, creation.keyEncryptionKey)
    return { create: newSealedKey(creation.keyEncryptionKey, creation.alg, nowMs, nowMs + delayMs) }
  })
  const kid = change?.created?.kid
  const key = (await listKeys(options)).find((candidate) => candidate.kid === kid)
  if (key === undefined) throw new Error(`the key just created (${String(kid)}) is not in the table`)
  return key
}

export type Retirement =
  | { outcome: 'unknown' }
  | { outcome: 'already-retired', key: ListedKey }
  /** `replacement`: the key created in the same transaction because the retired one was signing. */
  | { outcome: 'retired', key: ListedKey, replacement: ListedKey | undefined }

/**
 * Retires `kid` at once. The key signing now is never retired alone: a new key, signing at once,
 * is created in the same transaction, so no replica is ever left without a key to sign with.
 */
export async function retireKey (options: KeyAdminOptions, creation: KeyCreation, kid: string): Promise<Retirement> {
  const nowMs = options.now()
  let found: Stored | undefined
  const change = await changeSigningKeys<SigningAlgorithm, PublicJwk>(options.db, (keys) => {
    found = keys.find((key) => key.kid === kid)
    if (found === undefined || found.retiredAtMs !== undefined) return undefined
    if (keySchedule(keys, nowMs, options.accessTokenTtlMs).signing?.kid !== kid) return { retireKid: kid }
    openPrivateKey(creation.keyEncryptionKey, found.kid, found.privateKeySealed)
    return { retireKid: kid, create: newSealedKey(creation.keyEncryptionKey, creation.alg, nowMs, nowMs) }
  })
  if (found === undefined) return { outcome: 'unknown' }
  const keys = await listKeys(options)
  const key = keys.find((candidate) => candidate.kid === kid)
  if (key === undefined) return { outcome: 'unknown' }
  if (change?.retired === undefined) return { outcome: 'already-retired', key }
  const createdKid = change.created?.kid
  return { outcome: 'retired', key, replacement: keys.find((candidate) => candidate.kid === createdKid) }
}
