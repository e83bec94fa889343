/**
 * The relying parties registered with `tollbooth clients` (oidc_clients, migration 010): their
 * metadata as oidc-provider reads it, and the SHA-256 of their secret (never the secret).
 */
import type { Queryable } from './pool.js'

export interface StoredOidcClient {
  clientId: string
  secretHash: Buffer | null
  firstParty: boolean
  /** Registered metadata in OpenID Connect's names (redirect_uris, token_endpoint_auth_method ...). */
  metadata: Record<string, unknown>
  createdAt: Date
}

interface Row { client_id: string, secret_hash: Buffer | null, first_party: boolean, metadata: Record<string, unknown>, created_at: Date }

function toClient (row: Row): StoredOidcClient {
  return { clientId: row.client_id, secretHash: row.secret_hash, firstParty: row.first_party, metadata: row.metadata, createdAt: row.created_at }
}

/** False when the client id is taken. */
export async function insertOidcClient (db: Queryable, client: Omit<StoredOidcClient, 'createdAt'>): Promise<boolean> {
  const { rowCount } = await db.query(
    'INSERT INTO oidc_clients (client_id, secret_hash, first_party, metadata) VALUES ($1, $2, $3, $4) ON CONFLICT (client_id) DO NOTHING',
    [client.clientId, client.secretHash, client.firstParty, client.metadata])
  return rowCount === 1
}

export async function findOidcClient (db: Queryable, clientId: string): Promise<StoredOidcClient | undefined> {
  const { rows } = await db.query<Row>('SELECT client_id, secret_hash, first_party, metadata, created_at FROM oidc_clients WHERE client_id = $1', [clientId])
  return rows[0] === undefined ? undefined : toClient(rows[0])
}

export async function listOidcClients (db: Queryable): Promise<StoredOidcClient[]> {
  const { rows } = await db.query<Row>('SELECT client_id, secret_hash, first_party, metadata, created_at FROM oidc_clients ORDER BY client_id')
  return rows.map(toClient)
}

/** False when there was no such client. Its tokens stop working at once: the provider finds no client. */
export async function deleteOidcClient (db: Queryable, clientId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM oidc_clients WHERE client_id = $1', [clientId])
  return rowCount === 1
}
