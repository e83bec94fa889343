// DevNest mix: each iteration is a new user's first minute: register (a fresh email), log in,
// write a post with the token from the login. 100 virtual users, ramping, as in the DevNest
// article's k6 test. Registration and login each cost one password hash; the post costs none.
//
//   k6 run examples/k6/devnest.js
//   BASE_URL=http://127.0.0.1:3911 VUS=10 RAMP=5s HOLD=10s k6 run examples/k6/devnest.js
//
// Environment: BASE_URL (http://127.0.0.1:3000), VUS (100), RAMP (30s), HOLD (60s),
// TIMEOUT (30s), RETRIES (5: how many 503s in a row a step takes before the iteration gives up),
// ON_503 (wait: sleep out Retry-After; retry: go again at once, as the articles' VUs do).
// Meant for the service with its defaults (2 s login and 5 s register deadlines). See README.md.
import { check } from 'k6'
import exec from 'k6/execution'
import http from 'k6/http'
import { Counter } from 'k6/metrics'
import { assertServiceUp, backOffIfOverloaded, envInt, postJson, rampThenHold } from './lib.js'

const RETRIES = envInt('RETRIES', 5, 0, 100)

const flowsCompleted = new Counter('flows_completed')
const flowsGivenUp = new Counter('flows_given_up')

// 503 (with Retry-After) is the designed answer to overload, not a failure; anything else
// outside 200/201 (a 409 for a fresh email, a 401 for a token just issued, a 500, a timeout)
// counts in http_req_failed.
http.setResponseCallback(http.expectedStatuses(200, 201, 503))

export const options = {
  scenarios: {
    // An iteration may sleep through a few Retry-Afters: gracefulStop lets the last ones finish.
    devnest: rampThenHold('main', { gracefulStop: '60s' }),
  },
  thresholds: {
    // No real failures: no timeouts, no connection errors, no 5xx other than the designed 503,
    // no 409 for a fresh email, no 401 for a token the service just issued.
    'http_req_failed{phase:main}': ['rate<0.01'],
    // Every answer is the right one (201 with a user and tokens, 200 with tokens, 201 with the
    // post as written, or a coded 503 with Retry-After).
    'checks{phase:main}': ['rate>0.99'],
    // A registration that is admitted finishes within its 5 s deadline (the longest it waits
    // for a hash thread) plus one hash and the inserts.
    'http_req_duration{phase:main,name:register,status:201}': ['p(95)<5500'],
    // The same for a login, whose deadline is 2 s.
    'http_req_duration{phase:main,name:login,status:200}': ['p(95)<2500'],
    // Refusals are fast, or at the latest at the deadline: overload never turns into timeouts.
    'http_req_duration{phase:main,status:503}': ['p(95)<5500'],
    // Writing a post needs no hash: it must not wait behind the hash queue however long it is.
    'http_req_duration{phase:main,name:post,status:201}': ['p(95)<500'],
    // Whole flows got through (so the thresholds above are not vacuous).
    flows_completed: ['count>0'],
  },
}

export function setup () {
  assertServiceUp()
  // Makes this run's emails unique against earlier runs on the same database.
  return { run: `${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}` }
}

/** One request, tried again after each 503's Retry-After, at most RETRIES times. */
function withRetries (name, send) {
  let res = send()
  let retries = 0
  // Every answer goes through backOffIfOverloaded (counted; on a 503 checked and slept on).
  while (backOffIfOverloaded(res, name) && retries < RETRIES) {
    retries++
    res = send()
  }
  if (res.status === 503) flowsGivenUp.add(1)
  return res
}

export default function (data) {
  const n = exec.scenario.iterationInTest
  const email = `k6-devnest-${data.run}-${n}@example.com`
  const password = `devnest password ${n}`

  let res = withRetries('register', () => postJson('/api/v1/auth/register', { email, password, name: `DevNest ${n}` }, { tags: { name: 'register' } }))
  if (res.status === 503) return
  if (!check(res, {
    'register: 201 with the new user': (r) => r.status === 201 && r.json('user.email') === email && typeof r.json('accessToken') === 'string',
  }, { name: 'register' })) return

  res = withRetries('login', () => postJson('/api/v1/auth/login', { email, password }, { tags: { name: 'login' } }))
  if (res.status === 503) return
  if (!check(res, {
    'login: 200 with tokens': (r) => r.status === 200 && typeof r.json('accessToken') === 'string',
  }, { name: 'login' })) return

  const post = { title: `Hello from VU ${exec.vu.idInTest}`, body: `Iteration ${n}: register, login, write a post.` }
  res = postJson('/api/v1/posts', post, { headers: { Authorization: `Bearer ${res.json('accessToken')}` }, tags: { name: 'post' } })
  if (check(res, {
    'post: 201 as written': (r) => r.status === 201 && r.json('title') === post.title && r.json('body') === post.body,
  }, { name: 'post' })) flowsCompleted.add(1)
}
