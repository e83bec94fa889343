// Login storm: 100 virtual users log in at once, over and over, as in the NestJS + bcrypt
// (cost 10) article and the load lab's login storm. Each VU logs in back to back (no think
// time) with one of a pool of accounts that setup() registers first (not measured).
//
//   k6 run examples/k6/login-storm.js
//   BASE_URL=http://127.0.0.1:3911 VUS=10 RAMP=5s HOLD=10s ACCOUNTS=10 k6 run examples/k6/login-storm.js
//   ON_503=retry k6 run examples/k6/login-storm.js        # naive clients: a 503 retried at once
//
// Environment: BASE_URL (http://127.0.0.1:3000), VUS (100), RAMP (30s), HOLD (60s),
// ACCOUNTS (50), ACCOUNT_PREFIX (k6-storm), TIMEOUT (30s), HEALTH_RATE (2 /s),
// ON_503 (wait: sleep out Retry-After; retry: go again at once, as the articles' VUs do).
// Meant for the service with its defaults (2 s login deadline). See README.md.
import { check } from 'k6'
import exec from 'k6/execution'
import http from 'k6/http'
import { Counter } from 'k6/metrics'
import { assertServiceUp, backOffIfOverloaded, BASE_URL, ensureAccounts, envInt, HOLD, postJson, RAMP, rampThenHold, seconds } from './lib.js'

const ACCOUNTS = envInt('ACCOUNTS', 50, 1, 100000)
const ACCOUNT_PREFIX = __ENV.ACCOUNT_PREFIX || 'k6-storm'
const HEALTH_RATE = envInt('HEALTH_RATE', 2, 0, 1000)
// Known to every run, so a second run can log in to the accounts of the first. Under bcrypt's 72 bytes.
const PASSWORD = 'k6 login storm password'

const loginsOk = new Counter('logins_ok')
/**
 * The logins that ended within the schedule (RAMP + HOLD from the storm's start). k6 lets the
 * iterations under way at its end finish (gracefulStop), and `logins_ok` counts them too: a
 * server that had queued 100 logins is credited with them. Comparisons of servers use this one,
 * over RAMP + HOLD seconds, as the load lab counts (docs/explanation/overload.md).
 */
const loginsOkInSchedule = new Counter('logins_ok_in_schedule')
const SCHEDULE_MS = (seconds(RAMP) + seconds(HOLD)) * 1000

// 200/201 are the answers we want; 503 (with Retry-After) is the service's designed answer to
// overload, not a failure. Anything else (401, 400, 500, a timeout) counts in http_req_failed.
http.setResponseCallback(http.expectedStatuses(200, 201, 503))

export const options = {
  // Registering ACCOUNTS bcrypt hashes, a few at a time; slow hashes or a busy machine need room.
  setupTimeout: '300s',
  scenarios: {
    storm: rampThenHold('storm', { exec: 'storm', gracefulStop: '35s' }),
    // A monitor probing liveness during the storm, as a load balancer would.
    ...(HEALTH_RATE > 0
      ? {
          health: {
            executor: 'constant-arrival-rate',
            exec: 'health',
            rate: HEALTH_RATE,
            timeUnit: '1s',
            duration: `${seconds(RAMP) + seconds(HOLD)}s`,
            preAllocatedVUs: 2,
            maxVUs: 10,
            tags: { phase: 'storm' },
          },
        }
      : {}),
  },
  thresholds: {
    // No real failures: no timeouts, no connection errors, no 5xx other than the designed 503,
    // no 401 for accounts whose password we know. Overload must be answered, not dropped.
    'http_req_failed{phase:storm}': ['rate<0.01'],
    // Every answer is the right one: a 200 carries tokens, a 503 is coded and has Retry-After.
    'checks{phase:storm}': ['rate>0.99'],
    // A login that is admitted finishes within the 2 s login deadline (its longest wait for a
    // hash thread) plus one hash and the database round trips: p95 under 2.5 s.
    'http_req_duration{phase:storm,name:login,status:200}': ['p(95)<2500'],
    // Overload is answered fast instead of queueing toward a timeout: refusals come at once
    // (SERVICE_OVERLOADED) or at the 2 s deadline at the latest (HASH_DEADLINE_EXCEEDED).
    'http_req_duration{phase:storm,name:login,status:503}': ['p(95)<2500'],
    // The storm really served logins (so the latency thresholds above are not vacuous).
    logins_ok: ['count>0'],
    // Liveness keeps answering during the storm, so no load balancer or orchestrator takes the
    // instance out: hashing is off the event loop. 100 ms leaves room for a shared machine.
    ...(HEALTH_RATE > 0 ? { 'http_req_duration{phase:storm,name:healthz}': ['p(99)<100'] } : {}),
  },
}

export function setup () {
  assertServiceUp()
  const emails = Array.from({ length: ACCOUNTS }, (_, i) => `${ACCOUNT_PREFIX}-${i}@example.com`)
  const { created, existing } = ensureAccounts(emails, PASSWORD)
  console.log(`setup: ${created} accounts registered, ${existing} already there, against ${BASE_URL}`)
  return { emails }
}

export function storm (data) {
  // Spread the VUs over the accounts; two VUs may share one, as two devices of a user would.
  const email = data.emails[(__VU * 7 + __ITER) % data.emails.length]
  const res = postJson('/api/v1/auth/login', { email, password: PASSWORD }, { tags: { name: 'login' } })
  if (backOffIfOverloaded(res, 'login')) return
  const ok = check(res, {
    'login: 200 with tokens': (r) => r.status === 200 && typeof r.json('accessToken') === 'string' && typeof r.json('refreshToken') === 'string',
  }, { name: 'login' })
  if (!ok) return
  loginsOk.add(1)
  if (Date.now() - exec.scenario.startTime <= SCHEDULE_MS) loginsOkInSchedule.add(1)
}

export function health () {
  const res = http.get(`${BASE_URL}/healthz`, { tags: { name: 'healthz' }, timeout: '10s' })
  check(res, { 'healthz: 200': (r) => r.status === 200 }, { name: 'healthz' })
}
