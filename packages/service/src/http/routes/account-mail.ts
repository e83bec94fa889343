/**
 * The account's mail routes: password reset (forgot, reset) and email verification (verify,
 * resend). The two that send mail answer 202 with one body whatever the address, or 429 past a
 * bound counted alike for every address.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { AccountTokenBody, EmailBody, errors, mailAcceptedMessage, ResetPasswordBody } from '../schemas.js'
import { normaliseEmail, type AccountMailService } from '../../accounts/index.js'
import type { PasswordEngine } from '../../hashing/index.js'
import { hashAdmission, type HashAdmissionOptions, type RefusalPacer } from '../../overload/index.js'
import { admittedRequest } from '../request-context.js'
import { trimEmail } from './auth.js'

export interface AccountMailRoutesOptions {
  account: AccountMailService
  engine: PasswordEngine
  pacer: RefusalPacer
  registerDeadlineMs: number
}

export const accountMailRoutes: FastifyPluginAsyncTypebox<AccountMailRoutesOptions> = async (app, { account, engine, pacer, registerDeadlineMs }) => {
  const resetAdmission: HashAdmissionOptions = { engine, pacer, kind: 'hash', deadlineMs: registerDeadlineMs }
  app.post('/auth/password/forgot', {
    preValidation: trimEmail,
    schema: {
      tags: ['auth'],
      summary: 'Mail a password-reset link',
      description: 'The same 202, body and timing whether or not an account has the address (the mail is sent in the background). Bounded per email address, per mailbox (plus tags and dots folded) and per client, each counted alike whether or not an account has the address: past a bound, 429 TOO_MANY_ATTEMPTS with Retry-After.',
      body: EmailBody,
      response: { 202: Type.Ref('MailAccepted'), ...errors(400, 413, 415, 429, 503) },
    },
  }, async (request, reply) => {
    await account.forgotPassword(normaliseEmail(request.body.email), request.ip)
    return await reply.code(202).send({ message: mailAcceptedMessage })
  })

  app.post('/auth/password/reset', {
    onRequest: hashAdmission(resetAdmission),
    schema: {
      tags: ['auth'],
      summary: 'Set a new password with the token of a reset mail',
      description: 'The token works once. Every session of the account is revoked (its refresh tokens stop working) and its failed logins are forgotten. An unknown, used or expired token: 401 ACCOUNT_TOKEN_INVALID.',
      body: ResetPasswordBody,
      response: { 204: Type.Null({ description: 'Password changed; sign in with it' }), ...errors(400, 401, 413, 415, 503) },
    },
  }, async (request, reply) => {
    await account.resetPassword(request.body, await admittedRequest(resetAdmission, request, reply))
    return await reply.code(204).send(null)
  })

  app.post('/auth/verify-email', {
    schema: {
      tags: ['auth'],
      summary: 'Confirm the email address with the token of a verification mail',
      description: 'The token works once. An unknown, used or expired token: 401 ACCOUNT_TOKEN_INVALID.',
      body: AccountTokenBody,
      response: { 204: Type.Null({ description: 'Address verified' }), ...errors(400, 401, 413, 415, 503) },
    },
  }, async (request, reply) => {
    await account.verifyEmail(request.body.token)
    return await reply.code(204).send(null)
  })

  app.post('/auth/verify-email/resend', {
    preValidation: trimEmail,
    schema: {
      tags: ['auth'],
      summary: 'Mail a new verification link',
      description: 'Sent only to an account whose address is not verified yet; the same 202 and body either way. Bounded as the password-reset mail, sharing its counts (429 TOO_MANY_ATTEMPTS with Retry-After).',
      body: EmailBody,
      response: { 202: Type.Ref('MailAccepted'), ...errors(400, 413, 415, 429, 503) },
    },
  }, async (request, reply) => {
    await account.resendVerification(normaliseEmail(request.body.email), request.ip)
    return await reply.code(202).send({ message: mailAcceptedMessage })
  })
}
