/**
 * Diagnostic login variants for the load lab's `auth-path` scenario (the NestJS article's
 * diagnosis: which step of login costs the time). Registered only under the harness's
 * `--lab-diagnostics`, on a loopback address: the `noop` and `jwt-only` variants skip the
 * password check.
 */
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { createError } from '../errors.js'
import { findUserByEmail } from '../db/index.js'
import { newTokenFamily, normaliseEmail } from '../accounts/index.js'
import { admittedRequest, errors, LoginBody, trimEmail, type HarnessRouteParts } from '../http/index.js'

export async function labRoutes (api: FastifyInstance, { db, auth, accessTokens, loginAdmission }: HarnessRouteParts): Promise<void> {
  api.log.warn('lab diagnostics are on: /api/v1/lab/login skips the password check in two of its variants')
  const app = api.withTypeProvider<TypeBoxTypeProvider>()
  app.post('/lab/login', {
    config: { noStore: true },
    preValidation: trimEmail,
    schema: {
      tags: ['lab'],
      summary: 'Login with steps removed, for the load lab (only under its harness)',
      description: '`hash=noop`: database lookup only. `hash=jwt-only`: lookup + JWT signing. `hash=full`: the real login.',
      querystring: Type.Object({ hash: Type.Union([Type.Literal('noop'), Type.Literal('jwt-only'), Type.Literal('full')]) }, { additionalProperties: false }),
      body: LoginBody,
      response: { 200: Type.Object({ variant: Type.String(), userId: Type.String(), accessToken: Type.Optional(Type.String()) }, { additionalProperties: true }), ...errors(400, 401, 413, 415, 429, 503) },
    },
  }, async (request, reply) => {
    const variant = request.query.hash
    if (variant === 'full') {
      const outcome = await auth.login(request.body, await admittedRequest(loginAdmission, request, reply))
      // The lab's users have no second factor; one that had would answer its challenge's absence of tokens.
      if ('challenge' in outcome) return { variant, userId: '' }
      return { variant, userId: outcome.result.user.id, accessToken: outcome.result.accessToken }
    }
    const user = await findUserByEmail(db, normaliseEmail(request.body.email))
    if (user === undefined) throw createError('AUTH_INVALID_CREDENTIALS')
    if (variant === 'noop') return { variant, userId: user.id }
    // A signature's cost alone: the session id names no session, so the token works nowhere.
    return { variant, userId: user.id, accessToken: accessTokens.sign(user.id, newTokenFamily(), ['pwd']) }
  })
}
