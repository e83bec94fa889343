/**
 * The keys this replica signs and verifies access tokens with: from the database (shared, rotated
 * on a schedule) or PEM files. From the database they are reloaded as soon as a change is notified
 * (key-changes.ts: a key retired stops signing and verifying at once), every `reloadIntervalMs`
 * in case a notification was lost, and at most once a second when a token names an unknown key.
 * A failed reload keeps the keys.
 */
import fs from 'node:fs'
import { performance } from 'node:perf_hooks'
import { type KeyObject, createPrivateKey } from 'node:crypto'
import type pg from 'pg'
import { createError, isTollboothError } from '../errors.js'
import { changeSigningKeys, listSigningKeys, type StoredSigningKey } from '../db/index.js'
import { KeyChangeListener } from './key-changes.js'
import { keySchedule, nextKeyActivation, type RotationPolicy } from './schedule.js'
import { newSealedKey, openPrivateKey } from './sealing.js'
import { algorithmOf, keyFromPem, privateKeyPem, publicJwkOf, publicKeyPem, type PublicJwk, type SigningAlgorithm } from './signing-key.js'

/** One key as the token code uses it; the same object for a kid across reloads, so per-key caches hold. */
export interface RingKey {
  kid: string
  alg: SigningAlgorithm
  publicJwk: PublicJwk
  publicPem: string
  /** PKCS#8 PEM, present on the key that signs. */
  privatePem: string | undefined
}

export interface KeySet {
  signing: RingKey
  /** The signing key included: what verifies, and what the JWK Set publishes. */
  verifying: RingKey[]
}

export interface KeySource {
  load (): Promise<KeySet>
  /** False when nothing can change without a restart (files). */
  readonly reloads: boolean
  /** Calls `onChange` whenever the keys may have changed, until closed; `intervalMs` is the ring's reload interval. */
  watch? (onChange: () => void, intervalMs: number): Promise<{ close (): Promise<void> }>
}

export interface RingLog {
  info (fields: object, message: string): void
  warn (fields: object, message: string): void
  error (fields: object, message: string): void
}

/** Unknown-kid reloads are at most this often: a stream of made-up kids costs one query a second. */
const unknownKidReloadIntervalMs = 1000

export class KeyRing {
  private keys: KeySet
  private readonly byKid = new Map<string, RingKey>()
  private timer: NodeJS.Timeout | undefined
  private reloading: Promise<boolean> | undefined
  /** A change was notified while a load was under way, which may have read the table before it. */
  private reloadAgain = false
  private lastReloadAtMs = Number.NEGATIVE_INFINITY
  private watch: { close (): Promise<void> } | undefined

  private constructor (private readonly source: KeySource, keys: KeySet, private readonly log: RingLog, private readonly clock: () => number) {
    this.keys = keys
    this.index()
  }

  /** Loads the keys (creating the first one if the source does); throws when none can sign. */
  static async open (source: KeySource, options: { reloadIntervalMs: number, log: RingLog, clock?: () => number }): Promise<KeyRing> {
    let ring: KeyRing | undefined
    let changedWhileOpening = false
    // Watching before the first load: a change committed while it reads is not missed.
    const watch = source.reloads
      ? await source.watch?.(() => {
        if (ring === undefined) changedWhileOpening = true
        else ring.changed()
      }, options.reloadIntervalMs)
      : undefined
    try {
      ring = new KeyRing(source, await source.load(), options.log, options.clock ?? (() => performance.now()))
    } catch (err) {
      await watch?.close()
      throw err
    }
    ring.watch = watch
    if (changedWhileOpening) ring.changed()
    if (source.reloads) {
      // The global setTimeout, so tests can drive it with node:test mock timers.
      ring.timer = setInterval(() => { void ring.reload() }, options.reloadIntervalMs)
      ring.timer.unref()
    }
    return ring
  }

  get signing (): RingKey {
    return this.keys.signing
  }

  get verifying (): readonly RingKey[] {
    return this.keys.verifying
  }

  find (kid: string): RingKey | undefined {
    return this.byKid.get(kid)
  }

  /** Reloads now; false when it failed (the keys in hand stay). Concurrent calls share one load. */
  async reload (): Promise<boolean> {
    this.reloading ??= this.source.load().then((keys) => {
      const previous = this.keys.signing.kid
      this.keys = keys
      this.index()
      if (keys.signing.kid !== previous) this.log.info({ kid: keys.signing.kid, previousKid: previous }, 'access tokens: a new key signs')
      return true
    }, (err: unknown) => {
      const fields = { err, kid: this.keys.signing.kid }
      if (isTollboothError(err, 'SIGNING_KEY_UNREADABLE')) this.log.error(fields, 'access tokens: the new signing key cannot be used; the keys in hand stay')
      else this.log.warn(fields, 'access tokens: reloading the signing keys failed; the keys in hand stay')
      return false
    }).finally(() => {
      this.lastReloadAtMs = this.clock()
      this.reloading = undefined
      if (this.reloadAgain) this.changed()
    })
    return await this.reloading
  }

  /** The source says the keys changed: reload now, or once more after the load under way. */
  private changed (): void {
    if (this.reloading !== undefined) {
      this.reloadAgain = true
      return
    }
    this.reloadAgain = false
    void this.reload()
  }

  /** For a token naming an unknown kid: reloads unless one ran within the last second; true if the kid is now known. */
  async reloadForUnknownKid (kid: string): Promise<boolean> {
    if (!this.source.reloads) return false
    if (this.reloading === undefined && this.clock() - this.lastReloadAtMs < unknownKidReloadIntervalMs) return false
    await this.reload()
    return this.byKid.has(kid)
  }

  /** Stops reloading; resolves once the source's watch has closed its connection. */
  async close (): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer)
    await this.watch?.close()
  }

  private index (): void {
    this.byKid.clear()
    for (const key of this.keys.verifying) this.byKid.set(key.kid, key)
  }
}

export interface DatabaseKeySourceOptions {
  db: pg.Pool
  keyEncryptionKey: Buffer
  rotation: RotationPolicy & { alg: SigningAlgorithm }
  accessTokenTtlMs: number
  /** Wall clock, epoch ms (tests move it). */
  now: () => number
  log: RingLog
}

/** Keys in PostgreSQL, shared by every replica; creates the first key and the next ones on schedule. */
export class DatabaseKeySource implements KeySource {
  readonly reloads = true
  private readonly cache = new Map<string, RingKey>()

  constructor (private readonly options: DatabaseKeySourceOptions) {}

  async load (): Promise<KeySet> {
    const { db, rotation, now } = this.options
    let stored = await listSigningKeys<SigningAlgorithm, PublicJwk>(db)
    if (nextKeyActivation(stored, now(), rotation) !== undefined) {
      const change = await changeSigningKeys<SigningAlgorithm, PublicJwk>(db, (keys) => {
        // Decided again under the lock: another replica may have just created it.
        const createdAtMs = now()
        const activatesAtMs = nextKeyActivation(keys, createdAtMs, rotation)
        return activatesAtMs === undefined ? undefined : { create: newSealedKey(this.options.keyEncryptionKey, rotation.alg, createdAtMs, activatesAtMs) }
      })
      const created = change?.created
      if (created !== undefined) this.options.log.info({ kid: created.kid, alg: created.alg, activatesAt: new Date(created.activatesAtMs).toISOString() }, 'access tokens: created a signing key')
      stored = await listSigningKeys<SigningAlgorithm, PublicJwk>(db)
    }
    return this.keySet(stored)
  }

  async watch (onChange: () => void, intervalMs: number): Promise<{ close (): Promise<void> }> {
    return await KeyChangeListener.start({ db: this.options.db, onChange, log: this.options.log, heartbeatIntervalMs: intervalMs })
  }

  private keySet (stored: Array<StoredSigningKey<SigningAlgorithm, PublicJwk>>): KeySet {
    const { signing, verifying } = keySchedule(stored, this.options.now(), this.options.accessTokenTtlMs)
    if (signing === undefined) throw createError('SIGNING_KEY_UNREADABLE', 'no signing key is active')
    const keys = verifying.map((row) => {
      let key = this.cache.get(row.kid)
      if (key === undefined) {
        key = { kid: row.kid, alg: row.alg, publicJwk: row.publicJwk, publicPem: publicKeyPem(row.publicJwk), privatePem: undefined }
        this.cache.set(row.kid, key)
      }
      return key
    })
    const signingKey = this.cache.get(signing.kid)
    if (signingKey === undefined) throw createError('INTERNAL', 'the signing key is not among the verifying ones')
    // Only the key that signs is ever decrypted.
    signingKey.privatePem ??= privateKeyPem(createPrivateKey({ key: openPrivateKey(this.options.keyEncryptionKey, signing.kid, signing.privateKeySealed), format: 'der', type: 'pkcs8' }))
    const live = new Set(keys.map((key) => key.kid))
    for (const kid of this.cache.keys()) if (!live.has(kid)) this.cache.delete(kid)
    return { signing: signingKey, verifying: keys }
  }
}

/** Keys given as PEM files: the signing key and older keys that only verify. Read once; a rolling restart rotates them. */
export class FileKeySource implements KeySource {
  readonly reloads = false

  constructor (private readonly signingKeyFile: string, private readonly verificationKeyFiles: readonly string[], private readonly alg: SigningAlgorithm) {}

  async load (): Promise<KeySet> {
    const signing = this.read(this.signingKeyFile, true)
    const others = this.verificationKeyFiles.map((file) => this.read(file, false)).filter((key) => key.kid !== signing.kid)
    return { signing, verifying: [signing, ...others] }
  }

  private read (file: string, mustSign: boolean): RingKey {
    let pem: string
    try {
      pem = fs.readFileSync(file, 'utf8')
    } catch (err) {
      throw createError('CONFIG_INVALID', `cannot read the key file ${file}: ${(err as Error).message}`, { cause: err })
    }
    const { privateKey, publicKey } = keyFromPem(pem, file)
    if (mustSign && privateKey === undefined) throw createError('CONFIG_INVALID', `TOLLBOOTH_SIGNING_KEY_FILE (${file}) must hold a private key`)
    const alg = algorithmOf(publicKey)
    if (mustSign && alg !== this.alg) throw createError('CONFIG_INVALID', `TOLLBOOTH_SIGNING_KEY_FILE (${file}) holds an ${alg} key, but TOLLBOOTH_JWT_ALGORITHM is ${this.alg}`)
    const publicJwk = publicJwkOf(publicKey)
    return { kid: publicJwk.kid, alg, publicJwk, publicPem: publicKeyPem(publicJwk), privatePem: mustSign && privateKey !== undefined ? privateKeyPem(privateKey as KeyObject) : undefined }
  }
}
