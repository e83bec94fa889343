/**
 * `login-burst`: every user's login sent at once, once their connections are open, each user on
 * a loopback address of its own (as a crowd behind a load balancer: no address throttle or pacing
 * joins them), for unknown accounts with wrong passwords; and user 0 reading `GET /api/v1/me`
 * every 5 ms while the logins are under way. How the service meets a crowd that arrives in one
 * instant: what it refuses at the door, how fast, and what a signed-in user's cheap read waits.
 *
 *   tollbooth lab run --scenario login-burst --vus 1001    # 1,000 logins and the reader
 *
 * Each user runs one iteration: it opens its connection (GET /healthz), waits until every user of
 * its generator thread has, and a moment more, then sends its login; the logins are written in
 * one turn of the thread's event loop. With --workers N each thread bursts on its own. Every login
 * is answered 401 (judged: its hash ran) or refused (503, 429): none succeeds, so the logins never
 * count as achieved; their statuses are the result. A user refused with a Retry-After would come
 * back after it within a run longer than that: the default run is one second, one login each.
 */
import { maxSourceAddresses } from '../http/index.js'
import type { Scenario, VirtualUser } from './scenario.js'

const burstEndpoints = { connect: 'GET /healthz', login: 'POST /auth/login', read: 'GET /me' } as const

/** Users, the reader included, when the user gives no --vus. */
const defaultUsers = 1001
const readEveryMs = 5
/**
 * From the last connection's first answer to the burst: the connections are then no longer
 * young to the service (200 ms from their first request, overload/pacing.ts), as a crowd's
 * already browsing would not be.
 */
const settleMs = 250

/**
 * The burst of one generator thread. It travels in the setup's data, which each thread receives
 * a copy of: the users of a thread share it, and nothing else does.
 */
interface Burst {
  /** Users whose iteration began. They all begin in one turn, before any connection answers. */
  users: number
  /** Users whose connection answered (or failed: they burst all the same). */
  connected: number
  loginsUnderWay: number
  /** Resolved when the thread's users all send their logins. */
  go?: Promise<void>
  release?: () => void
}

interface BurstData { token: string, burst: Burst }

/** The reader: `GET /me` every 5 ms from the burst until no login of its thread is under way. */
async function read (vu: VirtualUser, { token, burst }: BurstData): Promise<boolean> {
  let ok = true
  do {
    ok = (await vu.request(burstEndpoints.read, { method: 'GET', path: '/api/v1/me', token })).ok && ok
    await new Promise((resolve) => setTimeout(resolve, readEveryMs))
  } while (burst.loginsUnderWay > 0)
  return ok
}

export const loginBurst: Scenario<BurstData> = {
  name: 'login-burst',
  description: 'Every user\'s login at once for an unknown account, each from an address of its own, once the connections are open; user 0 reads GET /me every 5 ms meanwhile.',
  endpoints: [burstEndpoints.login, burstEndpoints.read, burstEndpoints.connect],
  // One address per user; one login each (the think time outlasts the run).
  defaults: { model: 'closed', vus: defaultUsers, durationMs: 1000, sourceAddresses: maxSourceAddresses, thinkTimeMs: 3_600_000, rate: 10, accounts: 1 },
  async setup (context) {
    const [token] = await context.loginAccounts(await context.registerAccounts(1, 'login-burst'))
    if (token === undefined) throw new Error('setup: the reader\'s login gave no token')
    return { token, burst: { users: 0, connected: 0, loginsUnderWay: 0 } }
  },
  async iteration (vu, data) {
    const { burst } = data
    burst.users++
    burst.go ??= new Promise((resolve) => { burst.release = resolve })
    try {
      await vu.request(burstEndpoints.connect, { method: 'GET', path: '/healthz' })
    } finally {
      if (++burst.connected === burst.users) setTimeout(() => { burst.release?.() }, settleMs)
    }
    await burst.go
    if (vu.id === 0) return await read(vu, data)
    burst.loginsUnderWay++
    try {
      const body = { email: `nobody.${vu.unique()}@tollbooth.test`, password: 'not the password' }
      return (await vu.request(burstEndpoints.login, { method: 'POST', path: '/api/v1/auth/login', body })).ok
    } finally {
      burst.loginsUnderWay--
    }
  },
}
