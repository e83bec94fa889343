/**
 * Dynamic client registrations bounded per client address, counted in PostgreSQL (so across
 * replicas) in the window of account registrations: past the bound, 429 with Retry-After before
 * oidc-provider reads the body or stores anything. Every request to the endpoint counts, refused
 * ones included, so an attempt to fill the clients table is slowed as much as a successful one.
 */
import type { IncomingMessage } from 'node:http'
import type { Provider } from 'oidc-provider'
import type pg from 'pg'
import { countRegistration } from '../db/index.js'

export interface RegistrationThrottle {
  /** Registrations one client address may send in a window. */
  clientRequests: number
  windowSeconds: number
}

/** The client's address key as the HTTP layer resolved it (trusted proxies, IPv6 by /64), by request. */
const clientAddresses = new WeakMap<IncomingMessage, string>()

/** Called by the HTTP layer before it hands a request to the provider. */
export function noteClientAddress (request: IncomingMessage, addressKey: string): void {
  clientAddresses.set(request, addressKey)
}

export function limitRegistrations (provider: Provider, db: pg.Pool, throttle: RegistrationThrottle): void {
  provider.use(async (ctx, next) => {
    if (ctx.method === 'POST' && ctx.path === '/reg') {
      const client = clientAddresses.get(ctx.req) ?? ctx.ip
      const { 'oidc-client': count } = await countRegistration(db, { 'oidc-client': client }, throttle.windowSeconds)
      if (count.requests > throttle.clientRequests) {
        ctx.status = 429
        ctx.set('retry-after', String(count.windowEndsInSeconds))
        ctx.set('cache-control', 'no-store')
        ctx.body = { error: 'too_many_requests', error_description: 'too many client registrations from this address; retry after the given delay' }
        return
      }
    }
    await next()
  })
}
