/**
 * The signing_keys table (migration 003): every replica reads it; a key is created or retired
 * under a transaction-scoped advisory lock, and the decision is taken again under that lock, so
 * replicas starting or rotating together create one key, not one each. Each change sends a
 * NOTIFY on `signingKeysChannel` with its transaction, so every replica listening reloads the
 * keys as it commits.
 */
import type pg from 'pg'
import { withTransaction, type Queryable } from './pool.js'

/** Arbitrary constant, distinct from the migrations' lock. */
const signingKeyLockKey = 7_351_024_118

/** The channel of the change notifications; an operator who edits the table by hand may `NOTIFY` it too. */
export const signingKeysChannel = 'tollbooth_signing_keys'

/**
 * A row as the key ring reads it. The table's CHECK constraint keeps `alg` to the algorithms the
 * key ring signs with, whose public key it wrote as `publicJwk`: the ring names those types.
 */
export interface StoredSigningKey<Alg extends string = string, Jwk extends object = object> {
  kid: string
  alg: Alg
  publicJwk: Jwk
  privateKeySealed: Buffer
  createdAtMs: number
  /** From when it signs (until the next key activates); published before that. */
  activatesAtMs: number
  /** Set: refused from then on, whatever its tokens' expiry. */
  retiredAtMs: number | undefined
}

type NewSigningKey<Alg extends string = string, Jwk extends object = object> = Omit<StoredSigningKey<Alg, Jwk>, 'createdAtMs' | 'retiredAtMs'> & { createdAtMs: number }

interface Row<Alg extends string, Jwk extends object> {
  kid: string
  alg: Alg
  public_jwk: Jwk
  private_key_sealed: Buffer
  created_at: Date
  activates_at: Date
  retired_at: Date | null
}

/** Every key, oldest activation first. */
export async function listSigningKeys<Alg extends string, Jwk extends object> (db: Queryable): Promise<Array<StoredSigningKey<Alg, Jwk>>> {
  const { rows } = await db.query<Row<Alg, Jwk>>('SELECT kid, alg, public_jwk, private_key_sealed, created_at, activates_at, retired_at FROM signing_keys ORDER BY activates_at, created_at, kid')
  return rows.map((row) => ({
    kid: row.kid,
    alg: row.alg,
    publicJwk: row.public_jwk,
    privateKeySealed: row.private_key_sealed,
    createdAtMs: row.created_at.getTime(),
    activatesAtMs: row.activates_at.getTime(),
    retiredAtMs: row.retired_at === null ? undefined : row.retired_at.getTime(),
  }))
}

/** What one change does: a key to insert, a key to retire (retired_at set to the database's now), or both. */
export interface SigningKeyChange<Alg extends string = string, Jwk extends object = object> {
  create?: NewSigningKey<Alg, Jwk>
  retireKid?: string
}

export interface AppliedSigningKeyChange<Alg extends string = string, Jwk extends object = object> {
  created: NewSigningKey<Alg, Jwk> | undefined
  retired: { kid: string, retiredAtMs: number } | undefined
}

/**
 * Under the lock, shows `decide` the keys as they are now and applies the change it returns, with
 * its NOTIFY, in one transaction: a replacement and the retirement of the key it replaces reach
 * every replica together. Returns what was applied; undefined when `decide` asked for nothing.
 */
export async function changeSigningKeys<Alg extends string, Jwk extends object> (pool: pg.Pool, decide: (keys: Array<StoredSigningKey<Alg, Jwk>>) => SigningKeyChange<Alg, Jwk> | undefined): Promise<AppliedSigningKeyChange<Alg, Jwk> | undefined> {
  return await withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [signingKeyLockKey])
    const change = decide(await listSigningKeys<Alg, Jwk>(client))
    if (change === undefined || (change.create === undefined && change.retireKid === undefined)) return undefined
    const { create, retireKid } = change
    if (create !== undefined) {
      await client.query(
        'INSERT INTO signing_keys (kid, alg, public_jwk, private_key_sealed, created_at, activates_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [create.kid, create.alg, JSON.stringify(create.publicJwk), create.privateKeySealed, new Date(create.createdAtMs), new Date(create.activatesAtMs)]
      )
    }
    let retired: AppliedSigningKeyChange['retired']
    if (retireKid !== undefined) {
      const { rows } = await client.query<{ retired_at: Date }>('UPDATE signing_keys SET retired_at = now() WHERE kid = $1 AND retired_at IS NULL RETURNING retired_at', [retireKid])
      const row = rows[0]
      if (row !== undefined) retired = { kid: retireKid, retiredAtMs: row.retired_at.getTime() }
    }
    // Delivered at COMMIT, and only if it commits.
    await client.query('SELECT pg_notify($1, $2)', [signingKeysChannel, JSON.stringify({ created: create?.kid, retired: retired?.kid })])
    return { created: create, retired }
  })
}

/** Subscribes `client` (a connection of its own, never a pooled one) to the change notifications. */
export async function listenForSigningKeyChanges (client: pg.Client): Promise<void> {
  await client.query(`LISTEN ${signingKeysChannel}`)
}
