/**
 * Security headers on every answer: helmet's, with a JSON API's settings, and `no-store` on the
 * routes that hand out tokens or answer for a signed-in account (`config: { noStore: true }`). helmet itself, not
 * @fastify/helmet, which rebuilds the middleware on every request: here it runs once, at start.
 */
import type { FastifyInstance, onSendHookHandler } from 'fastify'
import helmet, { type HelmetOptions } from 'helmet'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's answers carry a token or an account's data: no cache may keep any of them, errors included (RFC 6749 5.1; OWASP). */
    noStore?: boolean
  }
}

/**
 * A JSON API serves no page: nothing of it may be framed, run as script or sniffed into HTML.
 * `default-src 'none'` binds only what a rendered response would load, not programs reading it
 * as data; Cross-Origin-Resource-Policy `same-origin` binds no-cors loads only, never a CORS fetch.
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

/** helmet's headers on every answer, set in onRequest so early refusals (shedding, 404, 405) carry them too. */
export function installSecurityHeaders (app: FastifyInstance, headers: Readonly<Record<string, string>> = securityHeaders()): void {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers)
    done()
  })
}

/** The headers helmet sets with these options, read once by running it against a recorder, then set as a fixed map. */
export function securityHeaders (): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader (name: string, value: unknown): void { headers[name.toLowerCase()] = String(value) },
    removeHeader (): void {},
  }
  helmet(helmetOptions)({} as never, recorder as never, (err?: unknown) => { if (err !== undefined && err !== null) throw err })
  return Object.freeze(headers)
}

/** On every answer of a no-store route: no cache may keep it (`pragma` for HTTP/1.0 caches, as RFC 6749 5.1 asks). */
export const noStoreHeaders: Readonly<Record<string, string>> = Object.freeze({ 'cache-control': 'no-store', pragma: 'no-cache' })

const noStore: onSendHookHandler = async (_request, reply, payload) => {
  reply.headers(noStoreHeaders)
  return payload
}

/** Gives the routes declared with `config.noStore` the no-store hook (only them: no hook on other answers). Before the routes are registered. */
export function installNoStoreHeaders (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if ((route.config as { noStore?: boolean } | undefined)?.noStore !== true) return
    const own = route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend]
    route.onSend = [...own, noStore]
  })
}
