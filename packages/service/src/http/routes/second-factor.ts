/**
 * The second factor: the sign-in's second step (a challenge from the password login and a code),
 * TOTP enrolment with an enrolment challenge (TOLLBOOTH_SECOND_FACTOR=required), and the signed-in
 * user's factors under /me/factors.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { bearerAuth, ChallengeBody, ConfirmTotpBody, errors, FactorList, FactorProofBody, SecondFactorBody, SecondFactorSignIn } from '../schemas.js'
import { admittedRequest, requireUser } from '../request-context.js'
import { presentedDevice, sendDevice, type DeviceCookieOptions } from '../device-cookie.js'
import type { AccessTokens, AuthService, Caller, SecondFactorService, SessionCheck } from '../../accounts/index.js'
import type { PasswordEngine } from '../../hashing/index.js'
import { hashAdmission, type HashAdmissionOptions, type RefusalPacer } from '../../overload/index.js'

export interface SecondFactorRoutesOptions {
  auth: AuthService
  factors: SecondFactorService
  accessTokens: AccessTokens
  sessions: SessionCheck
  engine: PasswordEngine
  pacer: RefusalPacer
  loginDeadlineMs: number
  deviceCookie: DeviceCookieOptions
}

function caller (request: FastifyRequest): Caller {
  return { userId: request.userId, sessionId: request.sessionId }
}

function userAgent (request: FastifyRequest): string | undefined {
  const header = request.headers['user-agent']
  return header === undefined || header.length === 0 ? undefined : header.slice(0, 512)
}

const proofDescription = 'Needs the password (`{ "password" }`, checked by login\'s rules: 403 CURRENT_PASSWORD_INCORRECT, counted for this session) or a code of a factor (`{ "method", "code" }`, throttled per account: 401 SECOND_FACTOR_INVALID or TOTP_CODE_REUSED, 429 TOO_MANY_ATTEMPTS).'

export const secondFactorRoutes: FastifyPluginAsyncTypebox<SecondFactorRoutesOptions> = async (app, options) => {
  const { auth, factors, accessTokens, sessions, engine, pacer, loginDeadlineMs } = options
  const signedIn = requireUser(accessTokens, sessions)
  // A proof may be the password: login's hash admission, after the cheap authentication.
  const passwordAdmission: HashAdmissionOptions = { engine, pacer, kind: 'verify', deadlineMs: loginDeadlineMs }
  const signedInWithProof = [signedIn, hashAdmission(passwordAdmission)]

  app.post('/auth/login/second-factor', {
    config: { noStore: true },
    schema: {
      tags: ['auth'],
      summary: 'Complete a sign-in with a second factor: the password login\'s challenge and a TOTP or recovery code',
      description: 'Opens the session as the password login does (tokens, and the device token as the cookie tollbooth_device and the header Tollbooth-Device); its access tokens carry `amr: ["pwd","otp","mfa"]`. The challenge is spent by a success only: a wrong code (401 SECOND_FACTOR_INVALID), a TOTP code already used (401 TOTP_CODE_REUSED) leave it for another try, within its lifetime. Wrong codes are throttled per account (429 TOO_MANY_ATTEMPTS with Retry-After). 401 LOGIN_CHALLENGE_INVALID for a challenge unknown, spent or expired. With an enrolment challenge, the first code of the TOTP enrolled by POST /auth/login/totp confirms it, and the answer carries the ten recovery codes.',
      body: SecondFactorBody,
      response: { 200: SecondFactorSignIn, ...errors(400, 401, 403, 404, 413, 415, 429, 501, 503) },
    },
  }, async (request, reply) => {
    const signed = await auth.completeWithCode(request.body, { userAgent: userAgent(request), client: request.ip, deviceToken: presentedDevice(request) })
    sendDevice(reply, signed.deviceToken, options.deviceCookie)
    return signed.recoveryCodes === undefined ? signed.result : { ...signed.result, recoveryCodes: signed.recoveryCodes }
  })

  app.post('/auth/login/totp', {
    config: { noStore: true },
    schema: {
      tags: ['auth'],
      summary: 'Enrol TOTP with an enrolment challenge (TOLLBOOTH_SECOND_FACTOR=required, an account without a factor)',
      description: 'The secret is shown this once; its first code, sent to POST /auth/login/second-factor with the same challenge, confirms it and completes the sign-in. Asking again replaces the secret waiting for its first code. 401 LOGIN_CHALLENGE_INVALID for a challenge that is not a live enrolment challenge.',
      body: ChallengeBody,
      response: { 201: Type.Ref('TotpEnrolment'), ...errors(400, 401, 403, 409, 413, 415, 501, 503) },
    },
  }, async (request, reply) => {
    const userId = await auth.challengeUser(request.body.challenge, 'enrol')
    return await reply.code(201).send(await factors.beginTotp(userId))
  })

  app.get('/me/factors', {
    onRequest: signedIn,
    schema: {
      tags: ['factors'],
      summary: 'The signed-in user\'s second factors: TOTP (confirmed or waiting for its first code) and recovery codes (how many are left)',
      security: bearerAuth,
      response: { 200: FactorList, ...errors(401, 503) },
    },
  }, async (request) => ({ items: await factors.list(caller(request)) }))

  app.post('/me/factors/totp', {
    onRequest: signedIn,
    schema: {
      tags: ['factors'],
      summary: 'Start a TOTP enrolment: a secret shown this once, waiting for its first code',
      description: 'Asking again replaces a secret still waiting. 409 TOTP_ALREADY_ENROLLED when one is confirmed (remove it first). 403 SECOND_FACTOR_DISABLED with TOLLBOOTH_SECOND_FACTOR=off.',
      security: bearerAuth,
      response: { 201: Type.Ref('TotpEnrolment'), ...errors(400, 401, 403, 409, 413, 415, 501, 503) },
    },
  }, async (request, reply) => await reply.code(201).send(await factors.beginTotp(request.userId)))

  app.post('/me/factors/totp/confirm', {
    onRequest: signedIn,
    schema: {
      tags: ['factors'],
      summary: 'Confirm the waiting TOTP secret with a first code: a factor from now on; answers ten recovery codes, shown this once',
      description: 'Every other session of the account ends; this one keeps working. 401 SECOND_FACTOR_INVALID for a wrong code or no secret waiting (throttled per account: 429 TOO_MANY_ATTEMPTS).',
      security: bearerAuth,
      body: ConfirmTotpBody,
      response: { 200: Type.Ref('RecoveryCodes'), ...errors(400, 401, 403, 413, 415, 429, 501, 503) },
    },
  }, async (request) => await factors.confirmTotp(caller(request), request.body.code))

  app.delete('/me/factors/totp', {
    onRequest: signedInWithProof,
    schema: {
      tags: ['factors'],
      summary: 'Remove TOTP, and the recovery codes with it; every other session ends',
      description: `${proofDescription} 404 SECOND_FACTOR_NOT_FOUND when there is none.`,
      security: bearerAuth,
      body: FactorProofBody,
      response: { 204: Type.Null({ description: 'Removed' }), ...errors(400, 401, 403, 404, 413, 415, 429, 501, 503) },
    },
  }, async (request, reply) => {
    await factors.removeTotp(caller(request), request.body, await admittedRequest(passwordAdmission, request, reply))
    return await reply.code(204).send(null)
  })

  app.post('/me/factors/recovery-codes', {
    onRequest: signedInWithProof,
    schema: {
      tags: ['factors'],
      summary: 'Ten new recovery codes, shown this once; the old ones stop working',
      description: `${proofDescription} 404 SECOND_FACTOR_NOT_FOUND without a confirmed factor.`,
      security: bearerAuth,
      body: FactorProofBody,
      response: { 200: Type.Ref('RecoveryCodes'), ...errors(400, 401, 403, 404, 413, 415, 429, 501, 503) },
    },
  }, async (request, reply) => await factors.regenerateRecoveryCodes(caller(request), request.body, await admittedRequest(passwordAdmission, request, reply)))
}
