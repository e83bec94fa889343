/**
 * Response headers a security review looks for, on every answer: helmet's (through
 * @fastify/helmet) with a JSON API's settings, and `Cache-Control: no-store` on every response
 * of a route that hands out tokens (the route says so with `config: { tokenResponse: true }`).
 */
import type { FastifyInstance } from 'fastify'
import type { FastifyHelmetOptions } from '@fastify/helmet'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route's answers carry a token (an access or refresh token, a one-time token): no
     * cache, proxy or browser may keep them (RFC 6749 5.1; OWASP). Every answer of the route,
     * errors included, so a cache never keys on the route's URL alone.
     */
    tokenResponse?: boolean
  }
}

/**
 * A JSON API serves no page: nothing of it may be framed, run as script or sniffed into HTML.
 * `default-src 'none'` governs only what a browser would load *from* a response rendered as a
 * document; programs that fetch /openapi.json or the JWK Set (Swagger UI elsewhere, a
 * verifier) read it as data and are unaffected. Cross-Origin-Resource-Policy stays helmet's
 * `same-origin`: it binds no-cors loads (<script src>, <img>) only, never a CORS fetch.
 */
export const helmetOptions: FastifyHelmetOptions = {
  global: true,
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  xFrameOptions: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  // Meaningless (and ignored by browsers) over plain HTTP; over TLS it keeps clients on TLS.
  strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: true },
}

/** Adds the no-store hook for routes with `config.tokenResponse` (registered on the whole app). */
export function installTokenResponseHeaders (app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.routeOptions.config.tokenResponse === true) {
      reply.header('cache-control', 'no-store')
      // For HTTP/1.0 caches, as RFC 6749 5.1 asks.
      reply.header('pragma', 'no-cache')
    }
    return payload
  })
}
