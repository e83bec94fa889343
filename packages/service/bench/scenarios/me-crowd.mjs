/**
 * A crowd of cheap authenticated reads: each iteration is one `GET /api/v1/me`
 * with a token from setup (no hash during the load). Open model by default, so
 * the crowd does not slow down when the service does; `--vus N` makes it a
 * closed loop, for the service's capacity.
 *
 *   tollbooth lab run --scenario bench/scenarios/me-crowd.mjs --vus 64 --duration 20s      # capacity
 *   tollbooth lab run --scenario bench/scenarios/me-crowd.mjs --rate 4000 --duration 25s   # a crowd
 */
export default {
  name: 'me-crowd',
  description: 'GET /api/v1/me with tokens from setup: the cheapest authenticated request, as a crowd.',
  endpoints: ['GET /me'],
  defaults: { model: 'open', rate: 1000, stages: (ms) => [{ durationMs: ms, target: 64 }], thinkTimeMs: 0, accounts: 50 },
  async setup (context) {
    const accounts = await context.registerAccounts(context.accounts, 'me-crowd')
    return { tokens: await context.loginAccounts(accounts) }
  },
  async iteration (vu, { tokens }) {
    const token = tokens[vu.id % tokens.length]
    const response = await vu.request('GET /me', { method: 'GET', path: '/api/v1/me', token })
    return response.ok
  },
}
