/**
 * `login-storm`, the NestJS article's experiment: a crowd of virtual users
 * logging in over and over against a pool of pre-registered accounts with known
 * passwords (k6: 100 VUs, ramp up over 30 s, then hold).
 */
import { rampThenHold, type Account, type Scenario } from './scenario.js'

const loginEndpoint = 'POST /auth/login'

export const loginStorm: Scenario<{ accounts: Account[] }> = {
  name: 'login-storm',
  description: 'Logins over a pool of pre-registered accounts (the NestJS article: 100 VUs ramping over 30 s, bcrypt cost 10).',
  endpoints: [loginEndpoint],
  defaults: { model: 'closed', stages: rampThenHold(100), thinkTimeMs: 0, rate: 10, accounts: 50 },
  async setup (context) {
    return { accounts: await context.registerAccounts(context.accounts, 'login-storm') }
  },
  async iteration (vu, { accounts }) {
    const account = accounts[(vu.id + vu.iteration) % accounts.length]
    if (account === undefined) return false
    const response = await vu.request(loginEndpoint, { method: 'POST', path: '/api/v1/auth/login', body: account })
    return response.ok
  },
}
