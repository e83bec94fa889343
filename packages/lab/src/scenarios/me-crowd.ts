/**
 * `me-crowd`, a crowd of cheap authenticated reads: each iteration is one `GET /api/v1/me` with a
 * token from setup, so no hash runs during the load. Open model by default, so the crowd does not
 * slow down when the service does; `--vus N` makes it a closed loop, for the service's capacity.
 *
 *   tollbooth lab run --scenario me-crowd --vus 64 --duration 20s      # capacity
 *   tollbooth lab run --scenario me-crowd --rate 4000 --duration 25s   # a crowd
 */
import type { Scenario } from './scenario.js'

const meEndpoint = 'GET /me'

export const meCrowd: Scenario<{ tokens: string[] }> = {
  name: 'me-crowd',
  description: 'GET /api/v1/me with tokens from setup: the cheapest authenticated request, as a crowd.',
  endpoints: [meEndpoint],
  defaults: { model: 'open', rate: 1000, stages: (durationMs) => [{ durationMs, target: 64 }], thinkTimeMs: 0, accounts: 50 },
  async setup (context) {
    const accounts = await context.registerAccounts(context.accounts, 'me-crowd')
    return { tokens: await context.loginAccounts(accounts) }
  },
  async iteration (vu, { tokens }) {
    const token = tokens[vu.id % tokens.length]
    if (token === undefined) return false
    return (await vu.request(meEndpoint, { method: 'GET', path: '/api/v1/me', token })).ok
  },
}
