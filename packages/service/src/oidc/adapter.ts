/**
 * oidc-provider's storage on PostgreSQL: every model's instances in oidc_payloads (so any replica
 * serves any step of a flow), the clients from oidc_clients (registered with `tollbooth clients`
 * or the clients file, and by the provider itself only through dynamic registration when it is
 * on). Expired rows are never found; the purge job deletes them.
 */
import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider'
import type pg from 'pg'
import { consumeOidcPayload, deleteOidcGrant, deleteOidcPayload, findOidcClient, findOidcPayload, findOidcPayloadByUid, insertOidcClient, upsertOidcPayload } from '../db/index.js'
import { clientMetadata, clientSecretHash, firstPartyMember } from './client-metadata.js'

/** The models whose rows name a grant: revoked together when the grant is (a code used twice, a refresh token replayed). */
const grantable = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest', 'PreAuthorizedCode'])

class PayloadAdapter implements Adapter {
  constructor (private readonly db: pg.Pool, private readonly model: string) {}

  async upsert (id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    await upsertOidcPayload(this.db, {
      model: this.model,
      id,
      payload: payload as Record<string, unknown>,
      grantId: grantable.has(this.model) ? payload.grantId : undefined,
      uid: payload.uid,
      expiresInSeconds: typeof expiresIn === 'number' ? Math.ceil(expiresIn) : undefined,
    })
  }

  async find (id: string): Promise<AdapterPayload | undefined> {
    return await findOidcPayload(this.db, this.model, id) as AdapterPayload | undefined
  }

  async findByUid (uid: string): Promise<AdapterPayload | undefined> {
    return await findOidcPayloadByUid(this.db, this.model, uid) as AdapterPayload | undefined
  }

  /** The device flow is off: no user codes exist. */
  async findByUserCode (): Promise<undefined> {
    return undefined
  }

  async consume (id: string): Promise<void> {
    await consumeOidcPayload(this.db, this.model, id)
  }

  async destroy (id: string): Promise<void> {
    await deleteOidcPayload(this.db, this.model, id)
  }

  async revokeByGrantId (grantId: string): Promise<void> {
    await deleteOidcGrant(this.db, grantId)
  }
}

/**
 * Clients are read here, and written only by dynamic registration (a new client, never an update:
 * registration management is off). Its secret is stored as its SHA-256, as every client's; the
 * registration's answer, made from the client in memory, is the only place the secret appears.
 */
class ClientAdapter implements Adapter {
  constructor (private readonly db: pg.Pool) {}

  async find (id: string): Promise<AdapterPayload | undefined> {
    const stored = await findOidcClient(this.db, id)
    return stored === undefined ? undefined : clientMetadata(stored) as AdapterPayload
  }

  async upsert (id: string, payload: AdapterPayload): Promise<void> {
    const { client_id: _id, client_secret: secret, [firstPartyMember]: _firstParty, ...metadata } = payload as Record<string, unknown>
    const secretHash = typeof secret === 'string' ? clientSecretHash(secret) : null
    if (!await insertOidcClient(this.db, { clientId: id, secretHash, firstParty: false, metadata, source: 'registration' })) throw new Error(`a client ${id} is already registered`)
  }

  async findByUid (): Promise<undefined> { return undefined }
  async findByUserCode (): Promise<undefined> { return undefined }
  async consume (): Promise<void> { throw new Error('clients are never consumed') }
  async destroy (): Promise<void> { throw new Error('clients are removed with `tollbooth clients remove`') }
  async revokeByGrantId (): Promise<void> {}
}

export function postgresAdapter (db: pg.Pool): AdapterFactory {
  return (model) => model === 'Client' ? new ClientAdapter(db) : new PayloadAdapter(db, model)
}
