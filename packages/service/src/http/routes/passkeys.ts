/**
 * Passkeys: a signed-in user registers, lists, renames and deletes theirs (/me/passkeys); anyone
 * signs in with one, no email typed (/auth/passkey). A passkey check is one signature verify: these
 * routes never enter the hash queue's admission; they are counted and shed as every cheap route is.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import { bearerAuth, errors } from '../schemas.js'
import { PasskeyList, PasskeyParams, PasskeySignInBody, RegisterPasskeyBody, RenamePasskeyBody } from '../passkey-schemas.js'
import { requireUser, userAgent } from '../request-context.js'
import { sendDevice, type DeviceCookieOptions } from '../device-cookie.js'
import type { AccessTokens, AuthService, Caller, PasskeyService, SessionCheck } from '../../accounts/index.js'

export interface PasskeyRoutesOptions {
  passkeys: PasskeyService
  auth: AuthService
  accessTokens: AccessTokens
  sessions: SessionCheck
  deviceCookie: DeviceCookieOptions
  /** TOLLBOOTH_BODY_LIMIT_BYTES: the ceremonies' bodies get at least passkeyBodyLimitBytes. */
  bodyLimitBytes: number
}

/**
 * The body a ceremony may send: the largest response the schemas admit (an attestation object of
 * 32 KiB, which certificates can fill, and its client data) fits, so a valid one never gets 413.
 */
const passkeyBodyLimitBytes = 64 * 1024

/**
 * A passkey's id in a path: a UUID, so that `/me/passkeys/options` is never taken for one (PATCH on
 * it is a 405 with `Allow: POST`, not a 400 about an id).
 */
const passkeyIdPath = '/me/passkeys/:id(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)'

function caller (request: FastifyRequest): Caller {
  return { userId: request.userId, sessionId: request.sessionId }
}

const ceremonyErrors = 'PASSKEY_CHALLENGE_INVALID (400: unknown, spent or expired; each options answer is good for one verification), PASSKEY_ORIGIN_MISMATCH (400: a page origin not in TOLLBOOTH_PASSKEY_ORIGINS), PASSKEY_RP_ID_MISMATCH (400), PASSKEY_USER_NOT_VERIFIED (400: user verification is required), PASSKEY_INVALID (401: the signature or the response does not verify)'

export const passkeyRoutes: FastifyPluginAsyncTypebox<PasskeyRoutesOptions> = async (app, options) => {
  const { passkeys, auth, accessTokens, sessions } = options
  const signedIn = requireUser(accessTokens, sessions)
  const ceremonyBodyLimit = Math.max(options.bodyLimitBytes, passkeyBodyLimitBytes)

  app.post('/me/passkeys/options', {
    onRequest: signedIn,
    schema: {
      tags: ['passkeys'],
      summary: 'Options for navigator.credentials.create(): a discoverable passkey for the signed-in user, user verification required',
      security: bearerAuth,
      response: { 200: Type.Ref('PasskeyCreationOptions'), ...errors(401, 503) },
    },
  }, async (request) => await passkeys.registrationOptions(caller(request)))

  app.post('/me/passkeys', {
    onRequest: signedIn,
    bodyLimit: ceremonyBodyLimit,
    schema: {
      tags: ['passkeys'],
      summary: 'Register a passkey: the response of navigator.credentials.create() to the options; every other session ends',
      description: `Refusals: ${ceremonyErrors}; PASSKEY_ALREADY_REGISTERED (409).`,
      security: bearerAuth,
      body: RegisterPasskeyBody,
      response: { 201: Type.Ref('Passkey'), ...errors(400, 401, 409, 413, 415, 503) },
    },
  }, async (request, reply) => {
    const passkey = await passkeys.register(caller(request), { response: request.body.response as unknown as RegistrationResponseJSON, name: request.body.name })
    return await reply.code(201).send(passkey)
  })

  app.get('/me/passkeys', {
    onRequest: signedIn,
    schema: {
      tags: ['passkeys'],
      summary: 'The signed-in user\'s passkeys, oldest first',
      security: bearerAuth,
      response: { 200: PasskeyList, ...errors(401, 503) },
    },
  }, async (request) => ({ items: await passkeys.list(caller(request)) }))

  app.patch(passkeyIdPath, {
    onRequest: signedIn,
    schema: {
      tags: ['passkeys'],
      summary: 'Rename one of the signed-in user\'s passkeys',
      security: bearerAuth,
      params: PasskeyParams,
      body: RenamePasskeyBody,
      response: { 204: Type.Null({ description: 'Renamed' }), ...errors(400, 401, 404, 413, 415, 503) },
    },
  }, async (request, reply) => {
    await passkeys.rename(caller(request), request.params.id, request.body.name)
    return await reply.code(204).send(null)
  })

  app.delete(passkeyIdPath, {
    onRequest: signedIn,
    schema: {
      tags: ['passkeys'],
      summary: 'Delete one of the signed-in user\'s passkeys; every other session ends',
      description: '409 PASSKEY_LAST_SIGN_IN_METHOD when it is the account\'s last way to sign in (no password, no other passkey).',
      security: bearerAuth,
      params: PasskeyParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...errors(400, 401, 404, 409, 413, 415, 503) },
    },
  }, async (request, reply) => {
    await passkeys.remove(caller(request), request.params.id)
    return await reply.code(204).send(null)
  })

  app.post('/auth/passkey/options', {
    config: { noStore: true },
    schema: {
      tags: ['auth', 'passkeys'],
      summary: 'Options for navigator.credentials.get(): sign in with a passkey, no email typed',
      description: 'No allowCredentials: the browser offers the passkeys it holds for this relying party, and the chosen one names the account.',
      response: { 200: Type.Ref('PasskeyRequestOptions'), ...errors(413, 415, 503) },
    },
  }, async () => await passkeys.authenticationOptions())

  app.post('/auth/passkey/verify', {
    config: { noStore: true },
    bodyLimit: ceremonyBodyLimit,
    schema: {
      tags: ['auth', 'passkeys'],
      summary: 'Sign in with a passkey: the response of navigator.credentials.get() to the options',
      description: `A session as a password login opens (tokens, and a device token in the cookie tollbooth_device and the header Tollbooth-Device); its access token's amr is ["hwk" or "swk", "user", "mfa"] (RFC 8176: a device-bound or a syncable key, the user verified by the authenticator: two factors). Refusals: ${ceremonyErrors}; PASSKEY_CREDENTIAL_UNKNOWN (401: no account has it); PASSKEY_COUNTER_REGRESSED (401: the signature counter went back, a cloned authenticator); EMAIL_NOT_VERIFIED (403) where a password login of the account would get it.`,
      body: PasskeySignInBody,
      response: { 200: Type.Ref('AuthResponse'), ...errors(400, 401, 403, 413, 415, 503) },
    },
  }, async (request, reply) => {
    const verified = await passkeys.verifyAssertion(request.body.response as unknown as AuthenticationResponseJSON)
    const { result, deviceToken } = await auth.signInVerified(verified.user, { userAgent: userAgent(request), client: request.ip }, verified.amr)
    sendDevice(reply, deviceToken, options.deviceCookie)
    return result
  })
}
