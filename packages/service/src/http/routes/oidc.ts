/**
 * The OpenID Connect provider under /oidc: oidc-provider (a Koa application) answers every path
 * but the interaction pages, which are tollbooth's: the sign-in goes through the same admission,
 * pacing, throttle and password check as POST /api/v1/auth/login, and an overloaded service
 * answers the browser a "busy, retry in N s" page (503 + Retry-After). /oidc/jwks is the key
 * ring's JWK Set, the same keys as /.well-known/jwks.json.
 */
import type http from 'node:http'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Provider } from 'oidc-provider'
import { createError, isTollboothError, type TollboothError } from '../../errors.js'
import { addressKey, normaliseEmail, type AccessTokens, type AuthService, type PasskeyService } from '../../accounts/index.js'
import type { PasswordEngine } from '../../hashing/index.js'
import type { KeyRing } from '../../keys/index.js'
import { accountIdOf, noteClientAddress, oidcMountPath, type CurrentOidcProvider } from '../../oidc/index.js'
import { connectionKeys, hashAdmission, type HashAdmissionOptions, type RefusalPacer } from '../../overload/index.js'
import { admittedRequest, userAgent } from '../request-context.js'
import { deviceCookie, presentedDevice, type DeviceCookieOptions } from '../device-cookie.js'
import { toTollboothError } from '../error-handler.js'
import { busyPage, consentPage, errorPage, providerPagePolicy, readOidcPasskeyScript, secondFactorPage, sendPage, sendScript, signInPage, throttledPage, type PasskeySignIn } from '../pages/index.js'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { AuthenticationResponseJSON } from '@simplewebauthn/server'
import { PasskeyAuthenticationResponse } from '../passkey-schemas.js'

export interface OidcRoutesOptions {
  providers: CurrentOidcProvider
  keyRing: KeyRing
  jwksMaxAgeSeconds: number
  auth: AuthService
  accessTokens: AccessTokens
  engine: PasswordEngine
  pacer: RefusalPacer
  loginDeadlineMs: number
  /** The device cookie's attributes (device-cookie.ts); scoped here to the provider's path. */
  deviceCookie: DeviceCookieOptions
  /** The sign-in page offers a passkey (verified as POST /api/v1/auth/passkey/verify does). */
  passkeys: PasskeyService
}

/** What a passkey's assertion must look like before it is verified (the API's own schema). */
const assertionShape = TypeCompiler.Compile(PasskeyAuthenticationResponse)

/** Each provider's request handler, made once. */
const handlers = new WeakMap<Provider, (req: http.IncomingMessage, res: http.ServerResponse) => void>()

function handlerOf (provider: Provider): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  let handler = handlers.get(provider)
  if (handler === undefined) {
    handler = provider.callback() as (req: http.IncomingMessage, res: http.ServerResponse) => void
    handlers.set(provider, handler)
  }
  return handler
}

/** The provider's own paths: the request handed over whole, its body unread, the path without the mount. */
async function providerPaths (app: FastifyInstance, providers: CurrentOidcProvider): Promise<void> {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
  const pass = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const raw = request.raw as http.IncomingMessage & { originalUrl?: string }
    // oidc-provider finds its mount path from originalUrl, as under Express.
    raw.originalUrl = raw.url
    const rest = (raw.url ?? '').slice(oidcMountPath.length)
    raw.url = rest.startsWith('/') ? rest : `/${rest}`
    // The client as the API's bounds see it (trusted proxies, IPv6 by /64): the registration bound counts by it.
    noteClientAddress(raw, addressKey(request.ip))
    reply.hijack()
    // Every page the provider renders has a policy; it adds its inline scripts' hashes to it.
    reply.raw.setHeader('content-security-policy', providerPagePolicy)
    handlerOf(providers.get())(raw, reply.raw)
  }
  app.route({ method: ['GET', 'POST', 'OPTIONS'], url: oidcMountPath, schema: { hide: true }, handler: pass })
  app.route({ method: ['GET', 'POST', 'OPTIONS'], url: `${oidcMountPath}/*`, schema: { hide: true }, handler: pass })
}

interface UidParams { uid: string }
type Details = Awaited<ReturnType<Provider['interactionDetails']>>
interface SignInForm { email?: string, password?: string }
interface PasskeyForm { response?: string }
interface SecondFactorForm { challenge?: string, code?: string, method?: string }

function formParser (app: FastifyInstance): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 8192 }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })
}

function field (value: unknown): string {
  return typeof value === 'string' ? value : ''
}

/** Errors of the pages answered as pages: overload as "busy, retry in N s" (503 + Retry-After, paced as the API's), a throttled account as "too many attempts" (429). */
function pageErrors (app: FastifyInstance, pacer: RefusalPacer): void {
  app.setErrorHandler((error, request, reply) => {
    const known = providerError(error) ?? toTollboothError(error as Error)
    if (known.retryAfterSeconds !== undefined) {
      const seconds = Math.max(1, Math.ceil(known.retryAfterSeconds))
      if (known.statusCode === 503) pacer.noteRefusal(connectionKeys(pacer, request, reply), seconds)
      void reply.code(known.statusCode).header('retry-after', String(seconds))
      return sendPage(reply, known.statusCode === 429 ? throttledPage(seconds) : busyPage(seconds))
    }
    if (known.code === 'INTERNAL') request.log.error({ err: error }, 'unhandled error on a sign-in page')
    if (known.code === 'NOT_FOUND') return sendPage(reply.code(400), errorPage({ title: 'Sign-in expired', message: 'This sign-in has expired or was already completed. Go back to the application and sign in again.' }))
    return sendPage(reply.code(known.statusCode), errorPage({ title: 'Sign-in failed', message: known.message }))
  })
}

/** oidc-provider's "no such interaction" (expired, finished, or its cookie missing): a 400 page, never a 500. */
function providerError (error: unknown): TollboothError | undefined {
  const name = (error as { name?: unknown }).name
  if (name === 'SessionNotFound' || name === 'InvalidRequest') return createError('NOT_FOUND', 'no such sign-in')
  return undefined
}

function secondFactorRefusal (err: unknown): string | undefined {
  if (isTollboothError(err, 'SECOND_FACTOR_INVALID') || isTollboothError(err, 'TOTP_CODE_REUSED') || isTollboothError(err, 'SECOND_FACTOR_NOT_FOUND')) return err.message
  return undefined
}

async function interactionPages (app: FastifyInstance, options: OidcRoutesOptions): Promise<void> {
  const { providers, auth, accessTokens, engine, pacer, loginDeadlineMs } = options
  const deviceCookieOptions: DeviceCookieOptions = { ...options.deviceCookie, path: oidcMountPath }
  const loginAdmission: HashAdmissionOptions = { engine, pacer, kind: 'verify', deadlineMs: loginDeadlineMs }
  formParser(app)
  pageErrors(app, pacer)
  const base = `${oidcMountPath}/interaction/:uid`
  const action = (uid: string, step: string): string => `${oidcMountPath}/interaction/${encodeURIComponent(uid)}/${step}`
  const passkeyScriptPath = `${oidcMountPath}/interaction/passkey.js`
  const passkeyOf = (uid: string): PasskeySignIn => ({ scriptPath: passkeyScriptPath, action: action(uid, 'passkey') })
  const passkeyScript = readOidcPasskeyScript()

  /** The interaction this browser is in; it must be the one the path names. */
  async function interaction (request: FastifyRequest<{ Params: UidParams }>, reply: FastifyReply): Promise<{ provider: Provider, details: Details }> {
    const provider = providers.get()
    const details = await provider.interactionDetails(request.raw, reply.raw)
    if (details.uid !== request.params.uid) throw createError('NOT_FOUND', 'no such sign-in')
    return { provider, details }
  }

  /** A page whose form leads, through the provider's redirects, to the client's redirect URI: the policy lets that origin end the chain. */
  async function formPage (reply: FastifyReply, statusCode: number, details: Details, markup: string): Promise<FastifyReply> {
    // The provider checked it against the client's registered ones before this interaction began.
    const redirectOrigin = new URL(String(details.params.redirect_uri)).origin
    return await sendPage(reply.code(statusCode), markup, { formAction: ["'self'", redirectOrigin] })
  }

  async function clientName (provider: Provider, clientId: unknown): Promise<string> {
    const client = typeof clientId === 'string' ? await provider.Client.find(clientId) : undefined
    return client?.clientName ?? client?.clientId ?? 'the application'
  }

  /** The interaction's result, then back to the provider (303: the browser GETs it). */
  async function finish (provider: Provider, request: FastifyRequest, reply: FastifyReply, result: Parameters<Provider['interactionResult']>[2], merge: boolean, device?: string): Promise<FastifyReply> {
    const returnTo = await provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: merge })
    if (device !== undefined) {
      // Beside the provider's own cookies, set on the raw response: one Set-Cookie list, none replaced.
      const set = reply.raw.getHeader('set-cookie')
      reply.raw.setHeader('set-cookie', [...(set === undefined ? [] : Array.isArray(set) ? set : [String(set)]), deviceCookie(device, deviceCookieOptions)])
    }
    return await reply.redirect(returnTo, 303)
  }

  /**
   * A tollbooth sign-in done: its session becomes the provider's login, and the browser keeps its
   * device token (a cookie on the provider's path), so its next sign-in is judged by its own failures.
   */
  async function signedIn (provider: Provider, request: FastifyRequest, reply: FastifyReply, signed: { result: { accessToken: string }, deviceToken: string }): Promise<FastifyReply> {
    const claims = await accessTokens.verify(signed.result.accessToken)
    return await finish(provider, request, reply, { login: { accountId: accountIdOf(claims), amr: claims.amr, remember: false } }, false, signed.deviceToken)
  }

  app.get<{ Params: UidParams }>(base, { schema: { hide: true } }, async (request, reply) => {
    const { provider, details } = await interaction(request, reply)
    const name = await clientName(provider, details.params.client_id)
    if (details.prompt.name === 'login') return await formPage(reply, 200, details, signInPage({ action: action(details.uid, 'login'), clientName: name, passkey: passkeyOf(details.uid) }))
    const scopes = String(details.params.scope ?? 'openid').split(' ').filter((scope) => scope.length > 0)
    return await formPage(reply, 200, details, consentPage({ action: action(details.uid, 'consent'), abortAction: action(details.uid, 'abort'), clientName: name, scopes }))
  })

  app.post<{ Params: UidParams, Body: SignInForm }>(`${base}/login`, { schema: { hide: true }, config: { noStore: true }, onRequest: hashAdmission(loginAdmission) }, async (request, reply) => {
    const { provider, details } = await interaction(request, reply)
    const email = field(request.body?.email).trim()
    const password = field(request.body?.password)
    // The client's name only for the page shown again: a lookup here would hold the hash place the door gave.
    const again = async (status: number, error: string): Promise<FastifyReply> => await formPage(reply, status, details, signInPage({ action: action(details.uid, 'login'), clientName: await clientName(provider, details.params.client_id), email, error, passkey: passkeyOf(details.uid) }))
    if (email.length === 0 || password.length === 0) return await again(400, 'Enter your email and password.')
    const context = await admittedRequest(loginAdmission, request, reply, [`account:${normaliseEmail(email)}`])
    let outcome
    try {
      outcome = await auth.login({ email, password }, { ...context, deviceToken: presentedDevice(request) })
    } catch (err) {
      if (isTollboothError(err, 'AUTH_INVALID_CREDENTIALS') || isTollboothError(err, 'PASSWORD_MALFORMED')) return await again(401, 'Email or password is incorrect.')
      throw err
    }
    if ('challenge' in outcome) {
      if (outcome.challenge.enrolmentRequired === true) throw createError('SECOND_FACTOR_NOT_FOUND', 'This account must set up a second factor first: sign in to your account page and add one.')
      return await formPage(reply, 200, details, secondFactorPage({ action: action(details.uid, 'second-factor'), challenge: outcome.challenge.challenge }))
    }
    return await signedIn(provider, request, reply, outcome)
  })

  app.get(passkeyScriptPath, { schema: { hide: true } }, async (_request, reply) => await sendScript(reply, passkeyScript))

  // A passkey counts as two factors: no password, no hash, no second step.
  app.post<{ Params: UidParams, Body: PasskeyForm }>(`${base}/passkey`, { schema: { hide: true }, config: { noStore: true } }, async (request, reply) => {
    const { provider, details } = await interaction(request, reply)
    const name = await clientName(provider, details.params.client_id)
    const again = async (status: number, error: string): Promise<FastifyReply> => await formPage(reply, status, details, signInPage({ action: action(details.uid, 'login'), clientName: name, error, passkey: passkeyOf(details.uid) }))
    let response: unknown
    try {
      response = JSON.parse(field(request.body?.response))
    } catch {
      return await again(400, 'The passkey\'s answer could not be read. Try again.')
    }
    if (!assertionShape.Check(response)) return await again(400, 'The passkey\'s answer could not be read. Try again.')
    try {
      const verified = await options.passkeys.verifyAssertion(response as AuthenticationResponseJSON)
      const signed = await auth.signInVerified(verified.user, { userAgent: userAgent(request), client: request.ip, deviceToken: presentedDevice(request) }, verified.amr)
      return await signedIn(provider, request, reply, signed)
    } catch (err) {
      const known = toTollboothError(err as Error)
      if (known.statusCode >= 500 || known.retryAfterSeconds !== undefined) throw err
      return await again(known.statusCode, known.message)
    }
  })

  app.post<{ Params: UidParams, Body: SecondFactorForm }>(`${base}/second-factor`, { schema: { hide: true }, config: { noStore: true } }, async (request, reply) => {
    const { provider, details } = await interaction(request, reply)
    const challenge = field(request.body?.challenge)
    const code = field(request.body?.code).replace(/\s+/g, '')
    const method = request.body?.method === 'recovery_code' ? 'recovery_code' : 'totp'
    try {
      const signed = await auth.completeWithCode({ challenge, method, code }, { userAgent: userAgent(request), client: request.ip, deviceToken: presentedDevice(request) })
      return await signedIn(provider, request, reply, signed)
    } catch (err) {
      const refusal = secondFactorRefusal(err)
      if (refusal === undefined) throw err
      return await formPage(reply, 401, details, secondFactorPage({ action: action(details.uid, 'second-factor'), challenge, error: refusal }))
    }
  })

  app.post<{ Params: UidParams }>(`${base}/consent`, { schema: { hide: true }, config: { noStore: true } }, async (request, reply) => {
    const { provider, details } = await interaction(request, reply)
    if (details.prompt.name !== 'consent' || details.session?.accountId === undefined) throw createError('NOT_FOUND', 'no consent is asked in this sign-in')
    const grant = details.grantId === undefined
      ? new provider.Grant({ accountId: details.session.accountId, clientId: String(details.params.client_id) })
      : await provider.Grant.find(details.grantId)
    if (grant === undefined) throw createError('NOT_FOUND', 'no such grant')
    const missing = details.prompt.details as { missingOIDCScope?: string[], missingOIDCClaims?: string[], missingResourceScopes?: Record<string, string[]> }
    if (missing.missingOIDCScope !== undefined) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
    if (missing.missingOIDCClaims !== undefined) grant.addOIDCClaims(missing.missingOIDCClaims)
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '))
    const grantId = await grant.save()
    return await finish(provider, request, reply, { consent: { grantId } }, true)
  })

  app.post<{ Params: UidParams }>(`${base}/abort`, { schema: { hide: true }, config: { noStore: true } }, async (request, reply) => {
    const { provider } = await interaction(request, reply)
    return await finish(provider, request, reply, { error: 'access_denied', error_description: 'The user denied access.' }, false)
  })
}

export const oidcRoutes: FastifyPluginAsync<OidcRoutesOptions> = async (app, options) => {
  app.get(`${oidcMountPath}/jwks`, { schema: { hide: true }, logLevel: 'warn' }, async (_request, reply) => {
    void reply.header('cache-control', `public, max-age=${options.jwksMaxAgeSeconds}`)
    return { keys: options.keyRing.verifying.map((key) => key.publicJwk) }
  })
  await app.register(async (scope) => { await providerPaths(scope, options.providers) })
  await app.register(async (scope) => { await interactionPages(scope, options) })
}
