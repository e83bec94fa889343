/**
 * Registering a relying party (`tollbooth clients add`): its metadata checked by oidc-provider's
 * own rules (client.validate) against this provider's configuration, then stored with the
 * SHA-256 of a generated secret, which is shown once and never kept. The clients file
 * (clients-file.ts) makes its rows and checks them with the same functions.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import type pg from 'pg'
import { createError } from '../errors.js'
import { deleteOidcClient, insertOidcClient, listOidcClients, type NewOidcClient, type OidcClientSource, type StoredOidcClient } from '../db/index.js'
import { clientMetadata, newClientId, newClientSecret } from './client-metadata.js'
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
    registration: { mode: 'off', token: undefined, throttle: { clientRequests: 1, windowSeconds: 1 } },
    accessTokenTtlSeconds: 600,
    interactionTtlSeconds: 600,
    refreshTokenTtlSeconds: 600,
    sessionTtlSeconds: 600,
    proxy: false,
  })
}

/** The row a registration makes (`secretHash` given: the caller made or was given the secret). */
export function clientToStore (registration: ClientRegistration & { clientId: string }, secretHash: Buffer | null, source: OidcClientSource): NewOidcClient {
  const metadata: Record<string, unknown> = {
    redirect_uris: registration.redirectUris,
    ...(registration.postLogoutRedirectUris.length === 0 ? {} : { post_logout_redirect_uris: registration.postLogoutRedirectUris }),
    token_endpoint_auth_method: registration.authMethod,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    ...(registration.name === undefined ? {} : { client_name: registration.name }),
    ...(registration.jwks === undefined ? {} : { jwks: registration.jwks }),
  }
  return { clientId: registration.clientId, secretHash, firstParty: registration.firstParty, metadata, source }
}

/** Whether a registration's method needs a secret (client_secret_basic and client_secret_post). */
export function needsSecret (authMethod: ClientAuthMethod): boolean {
  return authMethod === 'client_secret_basic' || authMethod === 'client_secret_post'
}

/** The rules every registration meets before oidc-provider's own; a message for the one broken, or undefined. */
export function registrationFault (registration: ClientRegistration): string | undefined {
  if (registration.redirectUris.length === 0) return 'a client needs at least one redirect URI'
  if (registration.authMethod === 'private_key_jwt' && registration.jwks === undefined) return 'private_key_jwt needs the client\'s public keys (a JWK Set)'
  if (registration.authMethod !== 'private_key_jwt' && registration.jwks !== undefined) return 'a JWK Set goes with private_key_jwt only'
  return undefined
}

/** Checks clients' metadata by oidc-provider's own rules (Client.validate): the first refused, by client id, with the provider's reason. */
export async function metadataFault (db: pg.Pool, clients: NewOidcClient[]): Promise<{ clientId: string, message: string } | undefined> {
  const provider = validatingProvider(db)
  for (const client of clients) {
    try {
      await provider.Client.validate(clientMetadata({ ...client, createdAt: new Date() }) as never)
    } catch (err) {
      const description = (err as { error_description?: unknown }).error_description
      return { clientId: client.clientId, message: typeof description === 'string' ? description : (err as Error).message }
    }
  }
  return undefined
}

export async function addClient (db: pg.Pool, registration: ClientRegistration): Promise<RegisteredClient> {
  const clientId = registration.clientId ?? newClientId()
  const fault = registrationFault(registration)
  if (fault !== undefined) throw createError('CONFIG_INVALID', fault)
  const secret = needsSecret(registration.authMethod) ? newClientSecret() : undefined
  const stored = clientToStore({ ...registration, clientId }, secret?.hash ?? null, 'cli')
  const refused = await metadataFault(db, [stored])
  if (refused !== undefined) throw createError('CONFIG_INVALID', `the client's metadata is refused: ${refused.message}`)
  if (!await insertOidcClient(db, stored)) throw createError('CONFIG_INVALID', `a client ${clientId} is already registered`)
  return { clientId, secret: secret?.secret }
}

export async function listClients (db: pg.Pool): Promise<StoredOidcClient[]> {
  return await listOidcClients(db)
}

export async function removeClient (db: pg.Pool, clientId: string): Promise<boolean> {
  return await deleteOidcClient(db, clientId)
}
