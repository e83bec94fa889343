import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { bearerAuth, errors, LoginBody, mailAcceptedMessage, RefreshBody, RegisterBody } from '../schemas.js'
import type { preValidationAsyncHookHandler } from 'fastify'
import { admittedRequest, requireUser } from '../request-context.js'
import { presentedDevice, sendDevice, type DeviceCookieOptions } from '../device-cookie.js'
import { normaliseEmail, type AccessTokens, type AuthService, type SessionCheck } from '../../accounts/index.js'
import type { PasswordEngine } from '../../hashing/index.js'
import { hashAdmission, type HashAdmissionOptions, type RefusalPacer } from '../../overload/index.js'

export interface AuthRoutesOptions {
  auth: AuthService
  accessTokens: AccessTokens
  sessions: SessionCheck
  engine: PasswordEngine
  pacer: RefusalPacer
  loginDeadlineMs: number
  registerDeadlineMs: number
  /** TOLLBOOTH_REGISTRATION_MODE. */
  registrationMode: 'immediate' | 'enumeration-safe'
  /** How the device token of a sign-in is handed to its client (device-cookie.ts). */
  deviceCookie: DeviceCookieOptions
}

/**
 * Surrounding spaces in an email are a typing accident (a phone keyboard adds one after
 * autocompletion), never part of the address: trimmed before validation, so the email
 * format still refuses spaces inside it.
 */
export const trimEmail: preValidationAsyncHookHandler = async (request) => {
  const body = request.body
  if (typeof body === 'object' && body !== null && 'email' in body && typeof body.email === 'string') body.email = body.email.trim()
}

export const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (app, options) => {
  const { auth, accessTokens, sessions, engine, pacer, loginDeadlineMs, registerDeadlineMs } = options
  const loginAdmission: HashAdmissionOptions = { engine, pacer, kind: 'verify', deadlineMs: loginDeadlineMs }
  const registerAdmission: HashAdmissionOptions = { engine, pacer, kind: 'hash', deadlineMs: registerDeadlineMs }
  app.post('/auth/register', {
    config: { noStore: true },
    onRequest: hashAdmission(registerAdmission),
    preValidation: trimEmail,
    schema: {
      tags: ['auth'],
      summary: 'Create an account (and, with TOLLBOOTH_REGISTRATION_MODE=immediate, sign in)',
      description: 'Queues the verification mail. By default (TOLLBOOTH_REGISTRATION_MODE=enumeration-safe): 202 with the same body whether or not the address is taken (its owner gets a mail instead), and no tokens; sign in once the address is verified. With immediate: 201 with tokens and a device token (the cookie tollbooth_device and the header Tollbooth-Device), 409 EMAIL_TAKEN for a taken address. 429 TOO_MANY_ATTEMPTS with Retry-After past the registrations of one client or of one mailbox (case, +tags and dots folded) in a window, before any hash. The password is normalised to Unicode NFC before it is hashed. 400 PASSWORD_TOO_COMMON (one of the 10,000 most common, any case), PASSWORD_BLANK (nothing visible) or PASSWORD_MALFORMED (a lone UTF-16 surrogate) for a password the schema admits but the policy refuses.',
      body: RegisterBody,
      response: { 201: Type.Ref('AuthResponse'), 202: Type.Ref('MailAccepted'), ...errors(400, 409, 413, 415, 429, 503) },
    },
  }, async (request, reply) => {
    const context = await admittedRequest(registerAdmission, request, reply)
    if (options.registrationMode === 'enumeration-safe') {
      await auth.registerQuietly(request.body, context)
      return await reply.code(202).send({ message: mailAcceptedMessage })
    }
    const { result, deviceToken } = await auth.register(request.body, context)
    sendDevice(reply, deviceToken, options.deviceCookie)
    return await reply.code(201).send(result)
  })

  app.post('/auth/login', {
    config: { noStore: true },
    onRequest: hashAdmission(loginAdmission),
    preValidation: trimEmail,
    schema: {
      tags: ['auth'],
      summary: 'Sign in with email and password',
      description: 'Unknown email and wrong password get the same 401, body and timing. 503 with Retry-After when the hash queue cannot meet the login deadline. A client that signed in to the account before sends its device token (the cookie tollbooth_device, or the header Tollbooth-Device) and is judged by its own failures: guesses from elsewhere cannot lock it out; any other client meets the account\'s and its address\'s bounds (429 TOO_MANY_ATTEMPTS with Retry-After, before any hash). A sign-in hands the client its device token in both. An account with a second factor (or any account, with TOLLBOOTH_SECOND_FACTOR=required) gets 200 with a SecondFactorChallenge instead of tokens: complete it with POST /auth/login/second-factor. The password is compared in its NFC form (and as typed, for hashes made before normalisation); 400 PASSWORD_MALFORMED for a lone UTF-16 surrogate, before any hash. 403 EMAIL_NOT_VERIFIED (right password, unverified address) only with TOLLBOOTH_REQUIRE_VERIFIED_EMAIL.',
      body: LoginBody,
      response: { 200: Type.Union([Type.Ref('AuthResponse'), Type.Ref('SecondFactorChallenge')]), ...errors(400, 401, 403, 413, 415, 429, 503) },
    },
  }, async (request, reply) => {
    // The account is a pacing key too, shared like the address (overload/pacing.ts), known once the body is
    // here: a login admitted again after its body came late is held for its account's refusals.
    const context = await admittedRequest(loginAdmission, request, reply, [`account:${normaliseEmail(request.body.email)}`])
    const outcome = await auth.login(request.body, { ...context, deviceToken: presentedDevice(request) })
    // A second step is due: no tokens, and no device token until it completes.
    if ('challenge' in outcome) return outcome.challenge
    sendDevice(reply, outcome.deviceToken, options.deviceCookie)
    return outcome.result
  })

  app.post('/auth/refresh', {
    config: { noStore: true },
    schema: {
      tags: ['auth'],
      summary: 'Trade a refresh token for a new token pair (the old one is spent)',
      description: 'The same token presented again within the refresh grace window (TOLLBOOTH_REFRESH_GRACE_SECONDS) gets the same new refresh token; later, an already rotated token revokes its whole session (AUTH_REFRESH_TOKEN_REUSED).',
      body: RefreshBody,
      response: { 200: Type.Ref('AuthResponse'), ...errors(400, 401, 403, 413, 415, 503) },
    },
  }, async (request) => await auth.refresh(request.body.refreshToken, { client: request.ip }))

  app.post('/auth/logout', {
    config: { noStore: true },
    schema: {
      tags: ['auth'],
      summary: 'End the refresh token\'s session: its refresh and access tokens stop working',
      body: RefreshBody,
      response: { 204: Type.Null({ description: 'Signed out' }), ...errors(400, 413, 415, 503) },
    },
  }, async (request, reply) => {
    await auth.logout(request.body.refreshToken)
    return await reply.code(204).send(null)
  })

  app.get('/me', {
    onRequest: requireUser(accessTokens, sessions),
    schema: {
      tags: ['users'],
      summary: 'The signed-in user',
      security: bearerAuth,
      description: 'Any route with a Bearer token answers 401 AUTH_SESSION_ENDED once the token\'s session has ended.',
      response: { 200: Type.Ref('User'), ...errors(401, 503) },
    },
  }, async (request) => await auth.me(request.userId))
}
