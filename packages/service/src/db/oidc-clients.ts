/**
 * The relying parties (oidc_clients, migrations 010 and 011): their metadata as oidc-provider reads
 * it, the SHA-256 of their secret (never the secret), and where they were registered.
 */
import type { Queryable } from './pool.js'

/** `cli`: `tollbooth clients add`; `file`: a clients file; `registration`: dynamic client registration. */
export type OidcClientSource = 'cli' | 'file' | 'registration'

export interface StoredOidcClient {
  clientId: string
  secretHash: Buffer | null
  firstParty: boolean
  /** Registered metadata in OpenID Connect's names (redirect_uris, token_endpoint_auth_method ...). */
  metadata: Record<string, unknown>
  source: OidcClientSource
  createdAt: Date
}

export type NewOidcClient = Omit<StoredOidcClient, 'createdAt'>

interface Row { client_id: string, secret_hash: Buffer | null, first_party: boolean, metadata: Record<string, unknown>, source: OidcClientSource, created_at: Date }

const columns = 'client_id, secret_hash, first_party, metadata, source, created_at'

function toClient (row: Row): StoredOidcClient {
  return { clientId: row.client_id, secretHash: row.secret_hash, firstParty: row.first_party, metadata: row.metadata, source: row.source, createdAt: row.created_at }
}

/** False when the client id is taken. */
export async function insertOidcClient (db: Queryable, client: NewOidcClient): Promise<boolean> {
  const { rowCount } = await db.query(
    'INSERT INTO oidc_clients (client_id, secret_hash, first_party, metadata, source) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (client_id) DO NOTHING',
    [client.clientId, client.secretHash, client.firstParty, client.metadata, client.source])
  return rowCount === 1
}

/** A client of the clients file changed in the file; false when it is not (or no longer) one of the file's. */
export async function updateFileOidcClient (db: Queryable, client: NewOidcClient): Promise<boolean> {
  const { rowCount } = await db.query(
    "UPDATE oidc_clients SET secret_hash = $2, first_party = $3, metadata = $4 WHERE client_id = $1 AND source = 'file'",
    [client.clientId, client.secretHash, client.firstParty, client.metadata])
  return rowCount === 1
}

export async function findOidcClient (db: Queryable, clientId: string): Promise<StoredOidcClient | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${columns} FROM oidc_clients WHERE client_id = $1`, [clientId])
  return rows[0] === undefined ? undefined : toClient(rows[0])
}

export async function listOidcClients (db: Queryable): Promise<StoredOidcClient[]> {
  const { rows } = await db.query<Row>(`SELECT ${columns} FROM oidc_clients ORDER BY client_id`)
  return rows.map(toClient)
}

/** False when there was no such client. Its tokens stop working at once: the provider finds no client. */
export async function deleteOidcClient (db: Queryable, clientId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM oidc_clients WHERE client_id = $1', [clientId])
  return rowCount === 1
}

/** Taken inside a transaction: one clients file applied at a time (replicas start together). */
export async function lockOidcClients (db: Queryable): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtext('tollbooth.oidc_clients'))")
}
