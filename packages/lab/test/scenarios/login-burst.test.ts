/**
 * The login-burst scenario's own logic, without a network: its users open their connections,
 * wait for each other, and send their logins in one turn; user 0 reads until they are answered.
 */
import assert from 'node:assert/strict'
import { EventEmitter, once } from 'node:events'
import { describe, it } from 'node:test'
import type { LabRequest, LabResponse } from '../../src/http/index.js'
import { builtInScenarios, type Scenario, type SetupContext, type VirtualUser } from '../../src/scenarios/index.js'

interface Sent { user: number, path: string }

/** Users whose requests are answered as the test says: /healthz at once, logins when released, reads at once. */
function scriptedCrowd (count: number): { users: VirtualUser[], sent: Sent[], sentMore: () => Promise<void>, releaseLogins: () => void } {
  const sent: Sent[] = []
  const events = new EventEmitter()
  let releaseLogins: () => void = () => {}
  const loginsAnswered = new Promise<void>((resolve) => { releaseLogins = resolve })
  const answer = (status: number): LabResponse => ({ status, failure: null, ok: status < 300, body: undefined, retryAfterSeconds: null, detail: null })
  const users = Array.from({ length: count }, (_, id): VirtualUser => ({
    id,
    iteration: 0,
    state: {},
    phase: undefined,
    unique: () => `u${id}`,
    async request (_endpoint: string, request: LabRequest) {
      sent.push({ user: id, path: request.path })
      events.emit('sent')
      if (request.path === '/api/v1/auth/login') {
        await loginsAnswered
        return answer(401)
      }
      // The connections answer one after the other, as a crowd's would.
      await new Promise((resolve) => setImmediate(resolve))
      return answer(200)
    },
  }))
  return { users, sent, sentMore: async () => { await once(events, 'sent') }, releaseLogins }
}

describe('the login-burst scenario', () => {
  const burst = builtInScenarios['login-burst'] as Scenario<unknown>

  it('sends every login in one turn, once every user\'s connection has answered; user 0 reads until they are answered', { timeout: 10_000 }, async () => {
    const setup: Pick<SetupContext, 'registerAccounts' | 'loginAccounts'> = {
      registerAccounts: async (count) => Array.from({ length: count }, (_, k) => ({ email: `e${k}`, password: 'p' })),
      loginAccounts: async (accounts) => accounts.map(() => 'reader-token'),
    }
    const data = await burst.setup?.(setup as SetupContext)
    const crowd = scriptedCrowd(4)
    // As a generator thread starts its users: all in one turn.
    const iterations = crowd.users.map(async (user) => await burst.iteration(user, data))
    const logins = (): Sent[] => crowd.sent.filter((request) => request.path === '/api/v1/auth/login')
    const reads = (): Sent[] => crowd.sent.filter((request) => request.path === '/api/v1/me')
    while (logins().length < 3 || reads().length < 2) await crowd.sentMore()

    // The reader's requests aside: every connection first, then the three logins together.
    const burstOrder = crowd.sent.filter((request) => request.path !== '/api/v1/me')
    assert.deepEqual(burstOrder.map((request) => request.path), [...Array(4).fill('/healthz'), ...Array(3).fill('/api/v1/auth/login')])
    assert.deepEqual(logins().map((request) => request.user).sort(), [1, 2, 3])
    assert.ok(reads().every((read) => read.user === 0))
    crowd.releaseLogins()
    const results = await Promise.all(iterations)
    assert.deepEqual(results, [true, false, false, false], 'the reader read; no login succeeds')
    const readsAfter = reads().length
    assert.ok(readsAfter >= 2, `${readsAfter} reads`)
  })
})
