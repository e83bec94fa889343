/**
 * `registration`, the ramp article's experiment: POST a fresh account at a
 * target rate (an open model), the rate raised 10 % per step by `lab knee`.
 */
import type { Scenario } from './scenario.js'

export const registration: Scenario = {
  name: 'registration',
  description: 'POST /auth/register with fresh emails at a target arrival rate (the registration-ramp article: +10 % per step until the service falls behind).',
  endpoints: ['POST /auth/register'],
  defaults: { model: 'open', stages: (durationMs) => [{ durationMs, target: 20 }], thinkTimeMs: 0, rate: 20, accounts: 0 },
  async iteration (vu) {
    const unique = vu.unique()
    const response = await vu.request('POST /auth/register', {
      method: 'POST',
      path: '/api/v1/auth/register',
      body: { email: `reg.${unique}@tollbooth.test`, password: `registration ${unique}`, name: 'Load Lab' },
    })
    return response.ok
  },
}
