/**
 * The OpenID Connect provider (oidc-provider, panva's certified implementation), configured for
 * tollbooth: the authorization code flow with PKCE (S256) only, no implicit or hybrid flow, no
 * password grant, dynamic registration only when the operator turns it on; refresh tokens
 * rotated, a rotated one presented again revoking its grant; ID tokens signed by the key ring's
 * signing key (EdDSA or ES256, never HS256); everything kept in PostgreSQL (adapter.ts); the
 * pages rendered by the caller.
 */
import { createPrivateKey } from 'node:crypto'
import { errors, interactionPolicy, Provider, type Client, type Configuration, type KoaContextWithOIDC } from 'oidc-provider'
import type pg from 'pg'
import type { SigningAlgorithm } from '../keys/index.js'
import { postgresAdapter } from './adapter.js'
import { clientSecretMatches, firstPartyMember, newClientId } from './client-metadata.js'
import { sessionOfAccountId, type SignedInSession } from './account-id.js'
import { limitRegistrations, type RegistrationThrottle } from './registration-throttle.js'

/** The provider is mounted here, under the public URL: the issuer is `<public URL>/oidc`. */
export const oidcMountPath = '/oidc'

/** The claims a signed-in user has, by the provider's scope names. */
export interface OidcClaims {
  email: string
  emailVerified: boolean
  name: string | undefined
}

/** What the provider needs of the accounts: a session's user's claims, and ending a session. */
export interface OidcAccounts {
  /** The user's claims while the session is live; undefined once it has ended (its tokens are then refused). */
  claimsOf (session: SignedInSession): Promise<OidcClaims | undefined>
  /** RP-initiated logout: the tollbooth session ends with the provider's. */
  endSession (session: SignedInSession): Promise<void>
}

/** The pages the provider renders itself: its errors and RP-initiated logout's two pages. */
interface OidcPages {
  error (error: { code: string, description: string | undefined }): string
  logoutConfirm (form: string, clientName: string | undefined): string
  loggedOut (clientName: string | undefined): string
}

interface SigningJwk {
  kid: string
  alg: SigningAlgorithm
  privatePem: string
}

export interface OidcProviderOptions {
  /** `<public URL>/oidc`. */
  issuer: string
  db: pg.Pool
  signing: SigningJwk
  /** Keys that sign the provider's cookies, first one signing; the same on every replica. */
  cookieKeys: string[]
  accounts: OidcAccounts
  pages: OidcPages
  accessTokenTtlSeconds: number
  /** Time to sign in (and give a second factor) before the flow must start again. */
  interactionTtlSeconds: number
  refreshTokenTtlSeconds: number
  sessionTtlSeconds: number
  /** Behind a proxy that sets X-Forwarded-Proto (TOLLBOOTH_TRUST_PROXY). */
  proxy: boolean
  /** Dynamic client registration (TOLLBOOTH_OIDC_REGISTRATION): `token` with its initial access token; bounded per client address. */
  registration: { mode: 'off' | 'token' | 'open', token: string | undefined, throttle: RegistrationThrottle }
}

/**
 * What a dynamically registered client may not ask for: to be first-party (its users' consent
 * skipped), or URLs the provider would fetch from its own network when it registers or signs in
 * (a request forged by the provider: its keys, its sector identifier, its request objects).
 */
const refusedInRegistration = [firstPartyMember, 'jwks_uri', 'sector_identifier_uri', 'request_uris'] as const

/**
 * The id of a registered client, made once its registration's body is parsed: the place to refuse
 * the members above before anything is stored (oidc-provider has no hook between the two).
 */
function registeredClientId (ctx: KoaContextWithOIDC): string {
  const body = (ctx.oidc.body ?? {}) as Record<string, unknown>
  const refused = refusedInRegistration.find((member) => body[member] !== undefined)
  if (refused !== undefined) throw new errors.InvalidClientMetadata(`${refused} is not accepted in a dynamic registration`)
  return newClientId()
}

/** An authorization code is exchanged at once by its client: a minute is plenty. */
const authorizationCodeTtlSeconds = 60
/** Algorithms a client may sign its own assertions with (private_key_jwt): asymmetric only. */
const clientAssertionAlgs = ['EdDSA', 'ES256', 'PS256', 'RS256'] as const

function privateJwk (signing: SigningJwk): Record<string, unknown> {
  const jwk = createPrivateKey(signing.privatePem).export({ format: 'jwk' })
  return { ...jwk, kid: signing.kid, alg: signing.alg, use: 'sig' }
}

function clientName (ctx: KoaContextWithOIDC): string | undefined {
  const client = ctx.oidc.client
  return client === undefined ? undefined : (client.clientName ?? client.clientId)
}

/**
 * Which pages may call the provider from a browser (CORS): a public client's token and revocation
 * endpoints and any client's userinfo, from the origin of one of that client's redirect URIs, as
 * a single-page app does. A confidential client keeps its secret on a server, which needs no CORS.
 */
function browserOriginAllowed (ctx: KoaContextWithOIDC, origin: string, client: Client): boolean {
  if (origin === 'null') return false
  if (ctx.oidc.route !== 'userinfo' && client.clientAuthMethod !== 'none') return false
  return (client.redirectUris ?? []).some((uri) => URL.canParse(uri) && new URL(uri).origin === origin)
}

/**
 * oidc-provider's prompts, and one more reason to ask for a sign-in: the provider's session
 * still names an account, but the tollbooth session it stood for has ended (signed out
 * elsewhere, a password change, the session deleted), so findAccount finds none. Without this
 * the flow goes on without an account and fails; with it the browser gets the sign-in page, and
 * signing in replaces the ended session's account (oidc-provider ends the old provider session).
 */
function signInPolicy (): interactionPolicy.Prompt[] {
  const policy = interactionPolicy.base()
  policy.get('login')?.checks.add(new interactionPolicy.Check('session_ended', 'the sign-in session has ended', (ctx) =>
    ctx.oidc.session?.accountId !== undefined && ctx.oidc.account === undefined ? interactionPolicy.Check.REQUEST_PROMPT : interactionPolicy.Check.NO_NEED_TO_PROMPT))
  return policy
}

function configuration (options: OidcProviderOptions): Configuration {
  const { accounts, pages } = options
  return {
    adapter: postgresAdapter(options.db),
    clients: [],
    jwks: { keys: [privateJwk(options.signing)] as never },
    cookies: { keys: options.cookieKeys },
    clientBasedCORS: browserOriginAllowed,
    async findAccount (_ctx, accountId) {
      const session = sessionOfAccountId(accountId)
      if (session === undefined) return undefined
      const claims = await accounts.claimsOf(session)
      if (claims === undefined) return undefined
      return {
        accountId,
        claims: () => ({ sub: session.userId, email: claims.email, email_verified: claims.emailVerified, ...(claims.name === undefined ? {} : { name: claims.name }) }),
      }
    },
    // oidc-provider makes the account id the subject; its pairwise hook is where a subject can differ
    // from it: here the user id alone, the same for every client (account-id.ts says why the session is in the id).
    subjectTypes: ['pairwise'],
    pairwiseIdentifier: (_ctx, accountId) => sessionOfAccountId(accountId)?.userId ?? accountId,
    // amr (RFC 8176) and auth_time with openid: every ID token says how and when its sign-in was made.
    claims: { openid: ['sub', 'amr', 'auth_time'], email: ['email', 'email_verified'], profile: ['name'] },
    scopes: ['openid', 'offline_access', 'email', 'profile'],
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
    enabledJWA: {
      idTokenSigningAlgValues: [options.signing.alg],
      userinfoSigningAlgValues: [options.signing.alg],
      introspectionSigningAlgValues: [options.signing.alg],
      authorizationSigningAlgValues: [options.signing.alg],
      clientAuthSigningAlgValues: [...clientAssertionAlgs],
      requestObjectSigningAlgValues: [...clientAssertionAlgs],
    },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      id_token_signed_response_alg: options.signing.alg,
      token_endpoint_auth_method: 'client_secret_basic',
    },
    extraClientMetadata: {
      properties: [firstPartyMember],
      validator (_ctx, key, value) {
        if (key === firstPartyMember && value !== undefined && typeof value !== 'boolean') throw new TypeError(`${firstPartyMember} must be a boolean`)
      },
    },
    features: {
      devInteractions: { enabled: false },
      registration: {
        enabled: options.registration.mode !== 'off',
        // A string: compared in constant time by oidc-provider (registration.js).
        initialAccessToken: options.registration.mode === 'token' ? options.registration.token ?? false : false,
        idFactory: registeredClientId,
        // No registration access token: a registered client is read, changed or removed by the
        // operator (tollbooth clients), and its stored secret (a SHA-256) is never read back.
        issueRegistrationAccessToken: false,
      },
      // A client revokes its own tokens; another's are left alone (RFC 7009: answered 200 all the same).
      revocation: { enabled: true, allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId },
      // Only a client that proved who it is learns about a token, and only about its own (RFC 7662 section 4: no token scanning).
      introspection: { enabled: true, allowedPolicy: (_ctx, client, token) => client.clientAuthMethod !== 'none' && token.clientId === client.clientId },
      userinfo: { enabled: true },
      clientCredentials: { enabled: false },
      deviceFlow: { enabled: false },
      requestObjects: { enabled: true, requireSignedRequestObject: false },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource (ctx, form) {
          ctx.type = 'html'
          ctx.body = pages.logoutConfirm(form, clientName(ctx))
        },
        postLogoutSuccessSource (ctx) {
          ctx.type = 'html'
          ctx.body = pages.loggedOut(clientName(ctx))
        },
      },
    },
    // Refresh tokens for every client allowed the grant; they end with the sign-in's session unless offline_access was granted.
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    ttl: {
      AccessToken: options.accessTokenTtlSeconds,
      IdToken: options.accessTokenTtlSeconds,
      AuthorizationCode: authorizationCodeTtlSeconds,
      Interaction: options.interactionTtlSeconds,
      RefreshToken: options.refreshTokenTtlSeconds,
      Grant: options.refreshTokenTtlSeconds,
      Session: options.sessionTtlSeconds,
    },
    interactions: { policy: signInPolicy(), url: (_ctx, interaction) => `${oidcMountPath}/interaction/${interaction.uid}` },
    // A first-party client's grant is given without asking; another's is the user's consent.
    async loadExistingGrant (ctx) {
      const client = ctx.oidc.client
      const session = ctx.oidc.session
      if (client === undefined || session === undefined || session.accountId === undefined) return undefined
      const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId)
      if (grantId !== undefined) return await ctx.oidc.provider.Grant.find(grantId)
      if (client.metadata()[firstPartyMember] !== true) return undefined
      const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId })
      grant.addOIDCScope(ctx.oidc.requestParamScopes.size === 0 ? 'openid' : [...ctx.oidc.requestParamScopes].join(' '))
      await grant.save()
      return grant
    },
    async renderError (ctx, out) {
      ctx.type = 'html'
      ctx.body = pages.error({ code: String(out.error), description: out.error_description === undefined ? undefined : String(out.error_description) })
    },
  }
}

export function createOidcProvider (options: OidcProviderOptions): Provider {
  const provider = new Provider(options.issuer, configuration(options))
  provider.proxy = options.proxy
  if (options.registration.mode !== 'off') limitRegistrations(provider, options.db, options.registration.throttle)
  // The stored secret is its SHA-256 (client-metadata.ts): the presented one is hashed to compare.
  provider.Client.prototype.compareClientSecret = function compareHashedSecret (this: { clientSecret?: string }, presented: string) {
    return clientSecretMatches(this.clientSecret, presented)
  } as never
  // RP-initiated logout that ends the provider's session ends the tollbooth session it stood for.
  provider.use(async (ctx, next) => {
    await next()
    if (ctx.oidc?.route !== 'end_session_confirm' || ctx.oidc.params?.logout === undefined) return
    const accountId = ctx.oidc.session?.accountId
    const session = accountId === undefined ? undefined : sessionOfAccountId(accountId)
    if (session !== undefined) await options.accounts.endSession(session)
  })
  return provider
}
