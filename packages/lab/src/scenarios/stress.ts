/**
 * `stress`, the Piscina article's 5,000-user test: thousands of concurrent
 * connections, mostly cheap authenticated reads and writes, with logins mixed
 * in. Tokens come from setup, so the crowd does not start with 5,000 hashes.
 */
import type { Account, Scenario, VirtualUser } from './scenario.js'

interface StressData {
  accounts: Account[]
  tokens: string[]
}

/** Out of 100 iterations: the mix of the crowd. */
const mix = [
  { share: 45, endpoint: 'GET /posts' },
  { share: 25, endpoint: 'GET /me' },
  { share: 25, endpoint: 'POST /posts' },
  { share: 5, endpoint: 'POST /auth/login' },
] as const

/** A deterministic spread of the mix over each virtual user's iterations. */
function pick (vu: VirtualUser): (typeof mix)[number]['endpoint'] {
  let slot = (vu.id * 37 + vu.iteration * 61) % 100
  for (const entry of mix) {
    if (slot < entry.share) return entry.endpoint
    slot -= entry.share
  }
  return 'GET /posts'
}

async function login (vu: VirtualUser, account: Account): Promise<string | undefined> {
  const response = await vu.request('POST /auth/login', { method: 'POST', path: '/api/v1/auth/login', body: account })
  const token = (response.body as { accessToken?: string } | undefined)?.accessToken
  if (response.ok && token !== undefined) vu.state.token = token
  return response.ok ? token : undefined
}

export const stress: Scenario<StressData> = {
  name: 'stress',
  description: 'Up to 5,000 concurrent virtual users (1 s think time): posts read and written, /me, and 5 % logins (the Piscina article\'s 5,000-user test).',
  endpoints: ['GET /posts', 'GET /me', 'POST /posts', 'POST /auth/login'],
  defaults: {
    model: 'closed',
    stages: (durationMs) => [
      { durationMs: Math.round(durationMs * 0.2), target: 1000 },
      { durationMs: Math.round(durationMs * 0.3), target: 5000 },
      { durationMs: durationMs - Math.round(durationMs * 0.2) - Math.round(durationMs * 0.3), target: 5000 },
    ],
    thinkTimeMs: 1000,
    rate: 200,
    accounts: 100,
  },
  async setup (context) {
    const accounts = await context.registerAccounts(context.accounts, 'stress')
    return { accounts, tokens: await context.loginAccounts(accounts) }
  },
  async iteration (vu, { accounts, tokens }) {
    const account = accounts[vu.id % accounts.length]
    if (account === undefined) return false
    const endpoint = pick(vu)
    if (endpoint === 'POST /auth/login') return (await login(vu, account)) !== undefined
    const token = (vu.state.token as string | undefined) ?? tokens[vu.id % tokens.length]
    if (token === undefined) return false
    switch (endpoint) {
      case 'GET /posts': return (await vu.request(endpoint, { method: 'GET', path: '/api/v1/posts?limit=20', token })).ok
      case 'GET /me': return (await vu.request(endpoint, { method: 'GET', path: '/api/v1/me', token })).ok
      case 'POST /posts': return (await vu.request(endpoint, { method: 'POST', path: '/api/v1/posts', token, body: { title: 'stress', body: `VU ${vu.id}, iteration ${vu.iteration}` } })).ok
    }
  },
}
