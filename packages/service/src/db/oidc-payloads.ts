/**
 * What the OpenID Connect provider keeps (oidc_payloads, migration 010): one row per instance of
 * one of oidc-provider's models, found by its id, its grant or its session uid. An expired row is
 * never returned, whether or not the purge has deleted it yet.
 */
import type { Queryable } from './pool.js'

/** A model instance's payload as oidc-provider hands it over (JSON). */
export type OidcPayload = Record<string, unknown>

export interface OidcPayloadWrite {
  model: string
  id: string
  payload: OidcPayload
  grantId: string | undefined
  uid: string | undefined
  /** Seconds from now; undefined: kept until destroyed. */
  expiresInSeconds: number | undefined
}

export async function upsertOidcPayload (db: Queryable, write: OidcPayloadWrite): Promise<void> {
  await db.query(
    `INSERT INTO oidc_payloads (model, id, payload, grant_id, uid, expires_at)
     VALUES ($1, $2, $3, $4, $5, CASE WHEN $6::int IS NULL THEN NULL ELSE now() + make_interval(secs => $6::int) END)
     ON CONFLICT (model, id) DO UPDATE
       SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id, uid = EXCLUDED.uid, expires_at = EXCLUDED.expires_at`,
    [write.model, write.id, write.payload, write.grantId ?? null, write.uid ?? null, write.expiresInSeconds ?? null])
}

interface PayloadRow { payload: OidcPayload, consumed: number | null }

/** The payload with `consumed` (epoch seconds) when it was consumed, as oidc-provider expects it. */
function withConsumed (row: PayloadRow | undefined): OidcPayload | undefined {
  if (row === undefined) return undefined
  return row.consumed === null ? row.payload : { ...row.payload, consumed: row.consumed }
}

const live = '(expires_at IS NULL OR expires_at > now())'
const selected = 'payload, floor(extract(epoch FROM consumed_at))::int AS consumed'

export async function findOidcPayload (db: Queryable, model: string, id: string): Promise<OidcPayload | undefined> {
  const { rows } = await db.query<PayloadRow>(`SELECT ${selected} FROM oidc_payloads WHERE model = $1 AND id = $2 AND ${live}`, [model, id])
  return withConsumed(rows[0])
}

export async function findOidcPayloadByUid (db: Queryable, model: string, uid: string): Promise<OidcPayload | undefined> {
  const { rows } = await db.query<PayloadRow>(`SELECT ${selected} FROM oidc_payloads WHERE model = $1 AND uid = $2 AND ${live} LIMIT 1`, [model, uid])
  return withConsumed(rows[0])
}

/** Marks it consumed (a code exchanged, a refresh token rotated); the first time only. */
export async function consumeOidcPayload (db: Queryable, model: string, id: string): Promise<void> {
  await db.query('UPDATE oidc_payloads SET consumed_at = now() WHERE model = $1 AND id = $2 AND consumed_at IS NULL', [model, id])
}

/** Deletes it; returns its payload, if it was there. */
export async function deleteOidcPayload (db: Queryable, model: string, id: string): Promise<OidcPayload | undefined> {
  const { rows } = await db.query<{ payload: OidcPayload }>('DELETE FROM oidc_payloads WHERE model = $1 AND id = $2 RETURNING payload', [model, id])
  return rows[0]?.payload
}

/** Deletes every token of the grant (a code used twice, a refresh token replayed, a revocation). */
export async function deleteOidcGrant (db: Queryable, grantId: string): Promise<void> {
  await db.query('DELETE FROM oidc_payloads WHERE grant_id = $1', [grantId])
}
