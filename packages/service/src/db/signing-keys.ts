/**
 * The signing_keys table (migration 003): every replica reads it; a new key is written under
 * a transaction-scoped advisory lock, and the decision to write it is taken again under that
 * lock, so replicas starting or rotating together create one key, not one each.
 */
import type pg from 'pg'
import type { PublicJwk, SigningAlgorithm } from '../keys/index.js'
import { withTransaction, type Queryable } from './pool.js'

/** Arbitrary constant, distinct from the migrations' lock. */
const signingKeyLockKey = 7_351_024_118

export interface StoredSigningKey {
  kid: string
  alg: SigningAlgorithm
  publicJwk: PublicJwk
  privateKeySealed: Buffer
  createdAtMs: number
  /** From when it signs (until the next key activates); published before that. */
  activatesAtMs: number
  /** Set: refused from then on, whatever its tokens' expiry. */
  retiredAtMs: number | undefined
}

export type NewSigningKey = Omit<StoredSigningKey, 'createdAtMs' | 'retiredAtMs'> & { createdAtMs: number }

interface Row {
  kid: string
  alg: SigningAlgorithm
  public_jwk: PublicJwk
  private_key_sealed: Buffer
  created_at: Date
  activates_at: Date
  retired_at: Date | null
}

/** Every key, oldest activation first. */
export async function listSigningKeys (db: Queryable): Promise<StoredSigningKey[]> {
  const { rows } = await db.query<Row>('SELECT kid, alg, public_jwk, private_key_sealed, created_at, activates_at, retired_at FROM signing_keys ORDER BY activates_at, created_at, kid')
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
export async function createSigningKeyIfNeeded (pool: pg.Pool, decide: (keys: StoredSigningKey[]) => NewSigningKey | undefined): Promise<NewSigningKey | undefined> {
  return await withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [signingKeyLockKey])
    const key = decide(await listSigningKeys(client))
    if (key === undefined) return undefined
    await client.query(
      'INSERT INTO signing_keys (kid, alg, public_jwk, private_key_sealed, created_at, activates_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [key.kid, key.alg, JSON.stringify(key.publicJwk), key.privateKeySealed, new Date(key.createdAtMs), new Date(key.activatesAtMs)]
    )
    return key
  })
}

/** Ends a key at once (believed compromised): it neither signs nor verifies from `atMs`. */
export async function retireSigningKey (db: Queryable, kid: string, atMs: number): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE signing_keys SET retired_at = $2 WHERE kid = $1 AND retired_at IS NULL', [kid, new Date(atMs)])
  return rowCount === 1
}
