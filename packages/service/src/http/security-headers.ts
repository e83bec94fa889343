/**
 * Response headers a security review looks for, on every answer: helmet's with a JSON API's
 * settings, and `Cache-Control: no-store` on every response of a route that hands out tokens
 * (the route says so with `config: { tokenResponse: true }`).
 *
 * helmet itself, not @fastify/helmet: the plugin builds helmet's middleware anew on every
 * request. Here helmet runs once, at start, to say which headers these options give
 * (securityHeaders); each answer then gets that fixed set through Fastify's header map.
 */
import type { FastifyInstance, onSendHookHandler } from 'fastify'
import helmet, { type HelmetOptions } from 'helmet'

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
const helmetOptions: Readonly<HelmetOptions> = {
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  xFrameOptions: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  // Meaningless (and ignored by browsers) over plain HTTP; over TLS it keeps clients on TLS.
  strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: true },
  // Headers that only mean something for an HTML page a browser renders (OWASP's REST Security
  // Cheat Sheet lists none of them for an API): each costs every answer its bytes and a setHeader.
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
}

/**
 * helmet's headers on every answer, set in onRequest so that early refusals (shedding, 404, 405)
 * carry them too. `headers`: securityHeaders(), when the caller also sends them outside Fastify
 * (the in-flight gate's refusal, overload/in-flight-gate.ts).
 */
export function installSecurityHeaders (app: FastifyInstance, headers: Readonly<Record<string, string>> = securityHeaders()): void {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers)
    done()
  })
}

/**
 * The headers helmet sets with these options, read once by running its middleware against a
 * response that only records them: every answer then gets them through Fastify's header map,
 * written with the others at once, instead of helmet's per-request setHeader calls (each
 * validated by node:http).
 */
export function securityHeaders (): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader (name: string, value: unknown): void { headers[name.toLowerCase()] = String(value) },
    removeHeader (): void {},
  }
  helmet(helmetOptions)({} as never, recorder as never, (err?: unknown) => { if (err !== undefined && err !== null) throw err })
  return Object.freeze(headers)
}

/** On every answer of a token route: no cache may keep it (`pragma` for HTTP/1.0 caches, as RFC 6749 5.1 asks). */
export const tokenResponseHeaders: Readonly<Record<string, string>> = Object.freeze({ 'cache-control': 'no-store', pragma: 'no-cache' })

const noStore: onSendHookHandler = async (_request, reply, payload) => {
  reply.headers(tokenResponseHeaders)
  return payload
}

/** Gives the routes declared with `config.tokenResponse` the no-store hook (only them: no hook on other answers). Before the routes are registered. */
export function installTokenResponseHeaders (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if ((route.config as { tokenResponse?: boolean } | undefined)?.tokenResponse !== true) return
    const own = route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend]
    route.onSend = [...own, noStore]
  })
}
