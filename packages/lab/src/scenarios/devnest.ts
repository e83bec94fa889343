/**
 * `devnest`, the Piscina article's mix: each iteration registers a fresh
 * account, logs in with it and writes a post (k6: 100 VUs).
 */
import { rampThenHold, type Scenario } from './scenario.js'

export const devnest: Scenario = {
  name: 'devnest',
  description: 'Register a fresh account, log in, create a post (the Piscina article: 100 VUs, register + login + post).',
  endpoints: ['POST /auth/register', 'POST /auth/login', 'POST /posts'],
  defaults: { model: 'closed', stages: rampThenHold(100), thinkTimeMs: 0, rate: 10, accounts: 0 },
  async iteration (vu) {
    const account = { email: `devnest.${vu.unique()}@tollbooth.test`, password: `devnest password ${vu.id}` }
    const registered = await vu.request('POST /auth/register', { method: 'POST', path: '/api/v1/auth/register', body: { ...account, name: `VU ${vu.id}` } })
    if (!registered.ok) return false
    const login = await vu.request('POST /auth/login', { method: 'POST', path: '/api/v1/auth/login', body: account })
    const token = (login.body as { accessToken?: string } | undefined)?.accessToken
    if (!login.ok || token === undefined) return false
    const post = await vu.request('POST /posts', {
      method: 'POST',
      path: '/api/v1/posts',
      token,
      body: { title: `Hello from VU ${vu.id}`, body: `Iteration ${vu.iteration} of the devnest scenario.` },
    })
    return post.ok
  },
}
