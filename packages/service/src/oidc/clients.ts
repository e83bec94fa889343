/**
 * Registering a relying party (`tollbooth clients add`): its metadata checked by oidc-provider's
 * own rules (client.validate) against this provider's configuration, then stored with the
 * SHA-256 of a generated secret, which is shown once and never kept.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import type pg from 'pg'
import { createError } from '../errors.js'
import { deleteOidcClient, insertOidcClient, listOidcClients, type StoredOidcClient } from '../db/index.js'
import { clientMetadata, newClientSecret } from './client-metadata.js'
import { createOidcProvider } from './provider.js'

export const clientAuthMethods = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'] as const
export type ClientAuthMethod = typeof clientAuthMethods[number]

export interface ClientRegistration {
  /** Unset: a random one. */
  clientId: string | undefined
  name: string | undefined
  /** Matched exactly, character for character. */
  redirectUris: string[]
  postLogoutRedirectUris: string[]
  /** `none`: a public client (a single-page or native app), PKCE its only proof. */
  authMethod: ClientAuthMethod
  /** private_key_jwt: the client's public keys (a JWK Set). */
  jwks: { keys: unknown[] } | undefined
  /** Its users are not asked for consent (an application of the same operator). */
  firstParty: boolean
}

export interface RegisteredClient {
  clientId: string
  /** Shown once: only its SHA-256 is kept. Undefined for a client without a secret. */
  secret: string | undefined
}

/** A provider to check metadata with: never serves, so its key and storage are throwaway. */
function validatingProvider (db: pg.Pool): ReturnType<typeof createOidcProvider> {
  const { privateKey } = generateKeyPairSync('ed25519')
  return createOidcProvider({
    issuer: 'https://validation.invalid/oidc',
    db,
    signing: { kid: 'validation', alg: 'EdDSA', privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string },
    cookieKeys: [randomBytes(32).toString('base64url')],
    accounts: { claimsOf: async () => undefined, endSession: async () => {} },
    pages: { error: () => '', logoutConfirm: () => '', loggedOut: () => '' },
    accessTokenTtlSeconds: 600,
    interactionTtlSeconds: 600,
    refreshTokenTtlSeconds: 600,
    sessionTtlSeconds: 600,
    proxy: false,
  })
}

export async function addClient (db: pg.Pool, registration: ClientRegistration): Promise<RegisteredClient> {
  const clientId = registration.clientId ?? randomBytes(16).toString('base64url')
  if (registration.redirectUris.length === 0) throw createError('CONFIG_INVALID', 'a client needs at least one redirect URI (--redirect-uri)')
  if (registration.authMethod === 'private_key_jwt' && registration.jwks === undefined) throw createError('CONFIG_INVALID', 'private_key_jwt needs the client\'s public keys (--jwks-file)')
  if (registration.authMethod !== 'private_key_jwt' && registration.jwks !== undefined) throw createError('CONFIG_INVALID', '--jwks-file goes with --auth private_key_jwt only')
  const secret = registration.authMethod === 'client_secret_basic' || registration.authMethod === 'client_secret_post' ? newClientSecret() : undefined
  const metadata: Record<string, unknown> = {
    redirect_uris: registration.redirectUris,
    ...(registration.postLogoutRedirectUris.length === 0 ? {} : { post_logout_redirect_uris: registration.postLogoutRedirectUris }),
    token_endpoint_auth_method: registration.authMethod,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    ...(registration.name === undefined ? {} : { client_name: registration.name }),
    ...(registration.jwks === undefined ? {} : { jwks: registration.jwks }),
  }
  const stored = { clientId, secretHash: secret?.hash ?? null, firstParty: registration.firstParty, metadata }
  try {
    await validatingProvider(db).Client.validate(clientMetadata({ ...stored, createdAt: new Date() }) as never)
  } catch (err) {
    const description = (err as { error_description?: unknown }).error_description
    throw createError('CONFIG_INVALID', `the client's metadata is refused: ${typeof description === 'string' ? description : (err as Error).message}`, { cause: err })
  }
  if (!await insertOidcClient(db, stored)) throw createError('CONFIG_INVALID', `a client ${clientId} is already registered`)
  return { clientId, secret: secret?.secret }
}

export async function listClients (db: pg.Pool): Promise<StoredOidcClient[]> {
  return await listOidcClients(db)
}

export async function removeClient (db: pg.Pool, clientId: string): Promise<boolean> {
  return await deleteOidcClient(db, clientId)
}
