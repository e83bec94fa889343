/**
 * `me-crowd` with arrivals that come back when refused: each arrival is a client that wants one
 * `GET /api/v1/me` and, answered 503, tries again, up to `attempts` requests in all. Naive clients
 * try again at once (as the seeds' k6 scripts do); polite ones wait out the Retry-After first.
 * The arrival rate is the new clients'; retries come on top of it, as they do in front of a real
 * service. Loaded by file (bench/haproxy-me-crowd.ts): me-crowd-naive.js, me-crowd-polite.js.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { meCrowd } from '../../src/scenarios/me-crowd.js'
import type { Scenario } from '../../src/scenarios/index.js'

/** Requests a client sends at most for its one read: the first and two retries. */
export const attemptsPerArrival = 3

export function retryingMeCrowd (clients: 'naive' | 'polite'): Scenario<{ tokens: string[] }> {
  const [endpoint = 'GET /me'] = meCrowd.endpoints
  return {
    ...meCrowd,
    name: `me-crowd-${clients}`,
    description: `${meCrowd.description} Refused arrivals try again (${clients === 'naive' ? 'at once' : 'after Retry-After'}), up to ${attemptsPerArrival} requests each.`,
    async iteration (vu, { tokens }) {
      const token = tokens[vu.id % tokens.length]
      if (token === undefined) return false
      for (let attempt = 1; ; attempt++) {
        const response = await vu.request(endpoint, { method: 'GET', path: '/api/v1/me', token })
        if (response.status !== 503 || attempt === attemptsPerArrival) return response.ok
        if (clients === 'polite') await sleep((response.retryAfterSeconds ?? 1) * 1000)
      }
    },
  }
}
