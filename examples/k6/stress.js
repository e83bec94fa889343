// Stress: the Piscina article's 5,000-user test, as the load lab's `stress` scenario has it.
// Virtual users ramp to 1,000 over the first fifth of DURATION and to 5,000 by half of it, then
// hold; each iteration is one request, mostly cheap ones (45 % GET /posts, 25 % GET /me, 25 %
// POST /posts) and 5 % logins, then THINK (1 s) of think time. Tokens come from setup, so the
// crowd does not start with 5,000 hashes. Far past what two cores serve at 1 s think time: what
// the service promises then is that the excess gets a fast 503 with Retry-After, never a timeout.
//
//   k6 run examples/k6/stress.js
//   THINK=2500ms k6 run examples/k6/stress.js                 # the article's offered load, about 2,000 requests/s
//   BASE_URL=http://127.0.0.1:3911 VUS=200 DURATION=20s k6 run examples/k6/stress.js
//
// Environment: BASE_URL (http://127.0.0.1:3000), VUS (5000), DURATION (30s), THINK (1s),
// ACCOUNTS (100), ACCOUNT_PREFIX (k6-stress), TIMEOUT (30s), ON_503 (wait: the refused request's
// Retry-After replaces its think time, as in the lab; retry: the think time only).
// Mind the file-descriptor limit of the shell k6 runs in (`ulimit -n`): a connection per VU.
import { check, sleep } from 'k6'
import exec from 'k6/execution'
import http from 'k6/http'
import { Counter } from 'k6/metrics'
import { assertServiceUp, BASE_URL, ensureAccounts, envDuration, envInt, errorCode, ON_503, overloaded, postJson, retryAfterSeconds, seconds, TIMEOUT } from './lib.js'

const PEAK_VUS = envInt('VUS', 5000, 1, 5000)
const DURATION = seconds(envDuration('DURATION', '30s'))
const THINK = seconds(envDuration('THINK', '1s'))
const ACCOUNTS = envInt('ACCOUNTS', 100, 1, 100000)
const ACCOUNT_PREFIX = __ENV.ACCOUNT_PREFIX || 'k6-stress'
// Known to every run, so a second run can log in to the accounts of the first. Under bcrypt's 72 bytes.
const PASSWORD = 'k6 stress password'

/** Out of 100 iterations: the crowd's mix (the lab's `stress`). */
const mix = [
  { share: 45, name: 'GET /posts' },
  { share: 25, name: 'GET /me' },
  { share: 25, name: 'POST /posts' },
  { share: 5, name: 'login' },
]

const answered = new Counter('requests_ok')

// 503 (with Retry-After) is the designed answer to overload; anything else but 2xx is a failure.
http.setResponseCallback(http.expectedStatuses(200, 201, 503))

export const options = {
  setupTimeout: '300s',
  scenarios: {
    stress: {
      executor: 'ramping-vus',
      startVUs: 0,
      stages: [
        { duration: `${Math.round(DURATION * 0.2)}s`, target: Math.min(1000, PEAK_VUS) },
        { duration: `${Math.round(DURATION * 0.3)}s`, target: PEAK_VUS },
        { duration: `${DURATION - Math.round(DURATION * 0.2) - Math.round(DURATION * 0.3)}s`, target: PEAK_VUS },
      ],
      gracefulRampDown: '5s',
      gracefulStop: '10s',
      tags: { phase: 'stress' },
    },
  },
  thresholds: {
    // Every user gets an answer: no timeouts, no refused or reset connections, no 5xx but the 503.
    'http_req_failed{phase:stress}': ['rate<0.01'],
    // Every answer is the right one: a 503 is coded SERVICE_OVERLOADED (or the login's
    // HASH_DEADLINE_EXCEEDED) and has Retry-After; a 2xx carries what was asked for.
    'checks{phase:stress}': ['rate>0.99'],
    // Past capacity the excess is refused, not queued: a cheap route's 503 comes within half a
    // second even at the 99th percentile (a main thread on a saturated two-core machine, the
    // load generator on the same cores; packages/service/bench/README.md, "The `stress` scenario").
    'http_req_duration{phase:stress,cheap:yes,status:503}': ['p(99)<500'],
    // Something was served (so the latency threshold above is not vacuous on an empty run).
    requests_ok: ['count>0'],
  },
}

export function setup () {
  assertServiceUp()
  const emails = Array.from({ length: ACCOUNTS }, (_, i) => `${ACCOUNT_PREFIX}-${i}@example.com`)
  const { created, existing } = ensureAccounts(emails, PASSWORD)
  const tokens = emails.map((email) => loginForSetup(email))
  console.log(`setup: ${created} accounts registered, ${existing} already there, ${tokens.length} signed in, against ${BASE_URL}`)
  return { emails, tokens }
}

/** One account's access token for setup, waiting out 503s (at most 10). */
function loginForSetup (email) {
  for (let attempt = 0; attempt < 10; attempt++) {
    const res = postJson('/api/v1/auth/login', { email, password: PASSWORD }, { tags: { name: 'login', phase: 'setup' }, responseCallback: http.expectedStatuses(200, 503) })
    if (res.status === 200) return res.json('accessToken')
    if (res.status !== 503) throw new Error(`setup: the login of ${email} answered ${res.status || res.error}: ${res.body}`)
    sleep(retryAfterSeconds(res))
  }
  throw new Error(`setup: the login of ${email} was refused 10 times`)
}

/** This VU's own token once it has logged in during the run (each VU runs its own copy of this file). */
let ownToken

/** The iteration's request, spread deterministically over the mix as the lab spreads it. */
function pick (vu, iteration) {
  let slot = (vu * 37 + iteration * 61) % 100
  for (const entry of mix) {
    if (slot < entry.share) return entry.name
    slot -= entry.share
  }
  return 'GET /posts'
}

export default function (data) {
  const vu = exec.vu.idInTest
  const name = pick(vu, exec.vu.iterationInScenario)
  const email = data.emails[vu % data.emails.length]
  const token = ownToken ?? data.tokens[vu % data.tokens.length]
  const auth = { headers: { Authorization: `Bearer ${token}` }, timeout: TIMEOUT }
  const cheap = { name, cheap: 'yes' }
  let res
  switch (name) {
    case 'GET /posts': res = http.get(`${BASE_URL}/api/v1/posts?limit=20`, { ...auth, tags: cheap }); break
    case 'GET /me': res = http.get(`${BASE_URL}/api/v1/me`, { ...auth, tags: cheap }); break
    case 'POST /posts': res = postJson('/api/v1/posts', { title: 'stress', body: `VU ${vu}` }, { ...auth, tags: cheap }); break
    default: res = postJson('/api/v1/auth/login', { email, password: PASSWORD }, { tags: { name, cheap: 'no' } })
  }
  if (res.status === 503) {
    overloaded.add(true, { name })
    check(res, {
      [`${name}: 503 is the overload answer, with Retry-After`]: (r) => r.headers['Retry-After'] !== undefined &&
        ['SERVICE_OVERLOADED', 'HASH_DEADLINE_EXCEEDED'].includes(errorCode(r)),
    }, { name })
    // As the lab's clients: a polite one comes back after Retry-After instead of its think time.
    sleep(ON_503 === 'wait' ? retryAfterSeconds(res) : THINK)
    return
  }
  overloaded.add(false, { name })
  const ok = check(res, {
    [`${name}: the answer asked for`]: (r) => name === 'login'
      ? r.status === 200 && typeof r.json('accessToken') === 'string'
      : r.status === (name === 'POST /posts' ? 201 : 200),
  }, { name })
  if (ok) {
    answered.add(1, { name })
    if (name === 'login') ownToken = res.json('accessToken')
  }
  sleep(THINK)
}
