/**
 * Diagnostic login variants for the load lab's `auth-path` scenario (the NestJS
 * article's diagnosis: which step of login costs the time). Registered only when
 * the service starts with TOLLBOOTH_LAB_DIAGNOSTICS=true, never by default: the
 * `noop` and `jwt-only` variants skip the password check.
 */
import type pg from 'pg'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { createError } from '../errors.js'
import { findUserByEmail } from '../db/users.js'
import { normaliseEmail, type AuthService } from '../accounts/auth-service.js'
import { requestContext } from '../http/request-context.js'
import { trimEmail } from '../http/routes/auth.js'
import { errors, LoginBody } from '../http/schemas.js'
import { newTokenFamily, type AccessTokens } from '../accounts/tokens.js'

export interface LabRoutesOptions {
  db: pg.Pool
  auth: AuthService
  accessTokens: AccessTokens
}

export const labRoutes: FastifyPluginAsyncTypebox<LabRoutesOptions> = async (app, { db, auth, accessTokens }) => {
  app.post('/lab/login', {
    config: { tokenResponse: true },
    preValidation: trimEmail,
    schema: {
      tags: ['lab'],
      summary: 'Login with steps removed, for the load lab (only with TOLLBOOTH_LAB_DIAGNOSTICS=true)',
      description: '`hash=noop`: database lookup only. `hash=jwt-only`: lookup + JWT signing. `hash=full`: the real login.',
      querystring: Type.Object({ hash: Type.Union([Type.Literal('noop'), Type.Literal('jwt-only'), Type.Literal('full')]) }, { additionalProperties: false }),
      body: LoginBody,
      response: { 200: Type.Object({ variant: Type.String(), userId: Type.String(), accessToken: Type.Optional(Type.String()) }, { additionalProperties: true }), ...errors(400, 401, 413, 415, 429, 503) },
    },
  }, async (request, reply) => {
    const variant = request.query.hash
    if (variant === 'full') {
      const result = await auth.login(request.body, requestContext(request, reply))
      return { variant, userId: result.user.id, accessToken: result.accessToken }
    }
    const user = await findUserByEmail(db, normaliseEmail(request.body.email))
    if (user === undefined) throw createError('AUTH_INVALID_CREDENTIALS')
    if (variant === 'noop') return { variant, userId: user.id }
    // A signature's cost alone: the session id names no session, so the token works nowhere.
    return { variant, userId: user.id, accessToken: accessTokens.sign(user.id, newTokenFamily()) }
  })
}
