import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { KeyRing } from '../../keys/index.js'

export interface JwksRoutesOptions {
  /** Undefined with HS256: the set is empty (a shared secret is never published). */
  keyRing: KeyRing | undefined
  maxAgeSeconds: number
}

const Jwk = Type.Object({
  kty: Type.Union([Type.Literal('OKP'), Type.Literal('EC')]),
  crv: Type.Union([Type.Literal('Ed25519'), Type.Literal('P-256')]),
  x: Type.String(),
  y: Type.Optional(Type.String()),
  kid: Type.String(),
  alg: Type.Union([Type.Literal('EdDSA'), Type.Literal('ES256')]),
  use: Type.Literal('sig'),
})

/**
 * The public keys that verify access tokens (RFC 7517 JWK Set), registered outside the API's
 * context like /healthz: never shed, no database query (the key ring holds them).
 */
export const jwksRoutes: FastifyPluginAsyncTypebox<JwksRoutesOptions> = async (app, { keyRing, maxAgeSeconds }) => {
  app.get('/.well-known/jwks.json', {
    schema: {
      tags: ['tokens'],
      summary: 'The public keys that verify access tokens (JWK Set)',
      description: 'Select the key by the token header\'s `kid`. Keys appear before they sign and stay until the last token they signed has expired. Empty when the service signs with HS256.',
      response: { 200: Type.Object({ keys: Type.Array(Jwk) }) },
    },
    logLevel: 'warn',
  }, async (_request, reply) => {
    void reply.header('cache-control', `public, max-age=${maxAgeSeconds}`)
    return { keys: keyRing === undefined ? [] : keyRing.verifying.map((key) => key.publicJwk) }
  })
}
