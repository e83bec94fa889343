/**
 * The signing_keys table (migration 003): every replica reads it; a new key is written under
 * a transaction-scoped advisory lock, and the decision to write it is taken again under that
 * lock, so replicas starting or rotating together create one key, not one each.
 */
import type pg from 'pg'
import { withTransaction, type Queryable } from './pool.js'

/** Arbitrary constant, distinct from the migrations' lock. */
const signingKeyLockKey = 7_351_024_118

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

export type NewSigningKey<Alg extends string = string, Jwk extends object = object> = Omit<StoredSigningKey<Alg, Jwk>, 'createdAtMs' | 'retiredAtMs'> & { createdAtMs: number }

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

/**
 * Under the lock, shows `decide` the keys as they are now; inserts the key it returns, if any.
 * Returns the key inserted (undefined when another replica had already done it).
 */
export async function createSigningKeyIfNeeded<Alg extends string, Jwk extends object> (pool: pg.Pool, decide: (keys: Array<StoredSigningKey<Alg, Jwk>>) => NewSigningKey<Alg, Jwk> | undefined): Promise<NewSigningKey<Alg, Jwk> | undefined> {
  return await withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [signingKeyLockKey])
    const key = decide(await listSigningKeys<Alg, Jwk>(client))
    if (key === undefined) return undefined
    await client.query(
      'INSERT INTO signing_keys (kid, alg, public_jwk, private_key_sealed, created_at, activates_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [key.kid, key.alg, JSON.stringify(key.publicJwk), key.privateKeySealed, new Date(key.createdAtMs), new Date(key.activatesAtMs)]
    )
    return key
  })
}
