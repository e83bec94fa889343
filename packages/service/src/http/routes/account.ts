/** The signed-in user's sessions and account: list and end sessions, sign out everywhere, change the password, delete the account. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { bearerAuth, ChangePasswordBody, DeleteAccountBody, errors, SessionList, SessionParams } from '../schemas.js'
import { admittedRequest, requireUser } from '../request-context.js'
import type { AccessTokens, AccountService, Caller, SessionCheck } from '../../accounts/index.js'
import type { PasswordEngine } from '../../hashing/index.js'
import { hashAdmission, type HashAdmissionOptions, type RefusalPacer } from '../../overload/index.js'

export interface AccountRoutesOptions {
  account: AccountService
  accessTokens: AccessTokens
  sessions: SessionCheck
  engine: PasswordEngine
  pacer: RefusalPacer
  loginDeadlineMs: number
}

function caller (request: FastifyRequest): Caller {
  return { userId: request.userId, sessionId: request.sessionId }
}

export const accountRoutes: FastifyPluginAsyncTypebox<AccountRoutesOptions> = async (app, options) => {
  const { account, accessTokens, sessions, engine, pacer, loginDeadlineMs } = options
  const signedIn = requireUser(accessTokens, sessions)
  // Authenticated first (cheap, and an anonymous caller costs no admission), then login's hash admission.
  const passwordAdmission: HashAdmissionOptions = { engine, pacer, kind: 'verify', deadlineMs: loginDeadlineMs }
  const signedInWithPassword = [signedIn, hashAdmission(passwordAdmission)]

  app.get('/me/sessions', {
    onRequest: signedIn,
    schema: {
      tags: ['sessions'],
      summary: 'The signed-in user\'s live sessions (one per sign-in), most recently used first',
      security: bearerAuth,
      response: { 200: SessionList, ...errors(401, 503) },
    },
  }, async (request) => ({ items: await account.listSessions(caller(request)) }))

  app.delete('/me/sessions/:id', {
    onRequest: signedIn,
    schema: {
      tags: ['sessions'],
      summary: 'End one of the signed-in user\'s sessions (its refresh and access tokens stop working)',
      security: bearerAuth,
      params: SessionParams,
      response: { 204: Type.Null({ description: 'Ended' }), ...errors(400, 401, 404, 413, 415, 503) },
    },
  }, async (request, reply) => {
    await account.endSession(caller(request), request.params.id)
    return await reply.code(204).send(null)
  })

  app.post('/auth/logout-all', {
    onRequest: signedIn,
    schema: {
      tags: ['auth'],
      summary: 'End every session of the signed-in user, this one included',
      security: bearerAuth,
      response: { 204: Type.Null({ description: 'Signed out everywhere' }), ...errors(400, 401, 413, 415, 503) },
    },
  }, async (request, reply) => {
    await account.logoutAll(caller(request))
    return await reply.code(204).send(null)
  })

  app.post('/me/password', {
    onRequest: signedInWithPassword,
    schema: {
      tags: ['users'],
      summary: 'Change the password; every other session ends, this one keeps working',
      description: 'A wrong current password is 403 CURRENT_PASSWORD_INCORRECT and is counted as a failure of the signed-in session, a known client (429 TOO_MANY_ATTEMPTS past its own bound, never the account\'s).',
      security: bearerAuth,
      body: ChangePasswordBody,
      response: { 204: Type.Null({ description: 'Changed' }), ...errors(400, 401, 403, 413, 415, 429, 503) },
    },
  }, async (request, reply) => {
    await account.changePassword(caller(request), request.body, await admittedRequest(passwordAdmission, request, reply))
    return await reply.code(204).send(null)
  })

  app.delete('/me', {
    onRequest: signedInWithPassword,
    schema: {
      tags: ['users'],
      summary: 'Delete the account and everything of it (sessions, tokens, posts), after checking the password',
      description: 'A wrong password is 403 CURRENT_PASSWORD_INCORRECT and is counted as a failure of the signed-in session, a known client (429 TOO_MANY_ATTEMPTS past its own bound, never the account\'s).',
      security: bearerAuth,
      body: DeleteAccountBody,
      response: { 204: Type.Null({ description: 'Deleted' }), ...errors(400, 401, 403, 413, 415, 429, 503) },
    },
  }, async (request, reply) => {
    await account.deleteAccount(caller(request), request.body.password, await admittedRequest(passwordAdmission, request, reply))
    return await reply.code(204).send(null)
  })
}
