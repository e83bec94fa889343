// Helpers shared by login-storm.js and devnest.js. This is k6 JavaScript (k6 v1), not Node.js:
// `k6/http` is synchronous and every virtual user (VU) runs this file in its own runtime.
import http from 'k6/http'
import { check, sleep } from 'k6'
import { Rate } from 'k6/metrics'

export const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1:3000').replace(/\/+$/, '')

/** A client gives up on a request after this long; a timeout is a real failure (status 0). */
export const TIMEOUT = envDuration('TIMEOUT', '30s')

/** The load's shape, shared by both scripts: ramp from 0 to VUS over RAMP, then hold VUS for HOLD. */
export const VUS = envInt('VUS', 100, 1, 5000)
export const RAMP = envDuration('RAMP', '30s')
export const HOLD = envDuration('HOLD', '60s')

/** That shape as a k6 scenario; everything it emits is tagged `phase`, which the thresholds select. */
export function rampThenHold (phase, extra = {}) {
  return {
    executor: 'ramping-vus',
    startVUs: 0,
    stages: [
      { duration: RAMP, target: VUS },
      { duration: HOLD, target: VUS },
    ],
    gracefulRampDown: '5s',
    tags: { phase },
    ...extra,
  }
}

/**
 * What a VU does with a 503: `wait` out its Retry-After (a polite client, the default), or
 * `retry` at once, as the seed articles' VUs do (a naive client: the retry storm that overload
 * protection must survive; docs/explanation/overload.md).
 */
export const ON_503 = envChoice('ON_503', 'wait', ['wait', 'retry'])

/** The longest Retry-After a VU honours, so a wild header cannot park a VU for the rest of the run. */
const MAX_RETRY_AFTER_SECONDS = 30

/**
 * The share of hashed requests (login, register) answered 503 + Retry-After. Overload is
 * answered at once by design, so this is a figure to read, not a failure; tagged by `name`.
 */
export const overloaded = new Rate('overloaded')

/** An integer from the environment (k6 `-e NAME=...` or the shell), checked at start. */
export function envInt (name, fallback, min, max) {
  const raw = __ENV[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`)
  }
  return value
}

/** One of `choices` from the environment, checked at start. */
export function envChoice (name, fallback, choices) {
  const raw = __ENV[name]
  if (raw === undefined || raw === '') return fallback
  if (!choices.includes(raw)) throw new Error(`${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(raw)}`)
  return raw
}

/** A duration from the environment ("90s", "2m", "1m30s", "500ms", or plain seconds), as k6 text. */
export function envDuration (name, fallback) {
  const raw = __ENV[name]
  if (raw === undefined || raw === '') return fallback
  if (/^\d+$/.test(raw)) return `${raw}s`
  if (!/^(\d+h)?(\d+m(?!s))?(\d+s)?(\d+ms)?$/.test(raw)) {
    throw new Error(`${name} must be a duration such as 30s, 2m or 1m30s, got ${JSON.stringify(raw)}`)
  }
  return raw
}

/** A k6 duration text in seconds (for adding stages up). */
export function seconds (duration) {
  const units = { h: 3600, m: 60, s: 1, ms: 0.001 }
  let total = 0
  for (const [, amount, unit] of duration.matchAll(/(\d+)(ms|h|m|s)/g)) total += Number(amount) * units[unit]
  return total
}

export function postJson (path, body, params = {}) {
  return http.post(`${BASE_URL}${path}`, JSON.stringify(body), {
    timeout: TIMEOUT,
    ...params,
    headers: { 'Content-Type': 'application/json', ...(params.headers || {}) },
  })
}

/** Whole seconds to wait before trying again, from Retry-After, within 1..MAX_RETRY_AFTER_SECONDS. */
export function retryAfterSeconds (res) {
  const value = Number.parseInt(res.headers['Retry-After'] || '', 10)
  if (!Number.isFinite(value)) return 1
  return Math.min(Math.max(value, 1), MAX_RETRY_AFTER_SECONDS)
}

/**
 * What a client does with the answer to a hashed request: record whether it was the overload
 * answer and, if it was, check that it is the designed one (a 503 coded SERVICE_OVERLOADED or
 * HASH_DEADLINE_EXCEEDED, with Retry-After). A polite client (ON_503=wait) then sleeps
 * Retry-After seconds (plus up to 0.5 s of jitter so the refused VUs do not all come back in
 * the same millisecond); a naive one (ON_503=retry) goes again at once. Returns true when the
 * request should be tried again.
 */
export function backOffIfOverloaded (res, name) {
  const isOverloaded = res.status === 503
  overloaded.add(isOverloaded, { name })
  if (!isOverloaded) return false
  check(res, {
    [`${name}: 503 is the overload answer, with Retry-After`]: (r) =>
      r.headers['Retry-After'] !== undefined &&
      ['SERVICE_OVERLOADED', 'HASH_DEADLINE_EXCEEDED'].includes(errorCode(r)),
  }, { name })
  if (ON_503 === 'wait') sleep(retryAfterSeconds(res) + Math.random() * 0.5)
  return true
}

/** `error.code` of an error answer, or undefined. */
export function errorCode (res) {
  try {
    return res.json('error.code')
  } catch {
    return undefined
  }
}

/** For setup(): fail at once, with a clear message, when nothing answers at BASE_URL. */
export function assertServiceUp () {
  const res = http.get(`${BASE_URL}/healthz`, { timeout: '10s', tags: { name: 'healthz-preflight' } })
  if (res.status !== 200) {
    throw new Error(`GET ${BASE_URL}/healthz answered ${res.status || res.error}; start the service or set BASE_URL`)
  }
}

/**
 * For setup(): makes sure each account exists with `password`, a few registrations at a time
 * (so setup itself does not overload the service it is about to measure). 201 is a new
 * account; 409 means it exists already (a second run against the same database), which is
 * fine once a login shows the password is the one we know. Requests are tagged
 * `phase: setup`, so the thresholds (scoped to the test's own phase) never see them.
 */
export function ensureAccounts (emails, password, parallel = 4) {
  const register = runInBatches(emails, parallel, [201, 409],
    (email) => setupPost('/api/v1/auth/register', { email, password }, 'register', [201, 409, 503]))
  const existing = emails.filter((email) => register.get(email) === 409)
  // Accounts left by an earlier run: prove the known password still opens them.
  const login = runInBatches(existing, parallel, [200, 401],
    (email) => setupPost('/api/v1/auth/login', { email, password }, 'login', [200, 401, 503]))
  for (const [email, status] of login) {
    if (status !== 200) {
      throw new Error(`${email} exists but its login answered ${status}: it was registered with another password; set ACCOUNT_PREFIX or use a fresh database`)
    }
  }
  return { created: emails.length - existing.length, existing: existing.length }
}

/** One request of setup, for http.batch. */
function setupPost (path, body, name, expectedStatuses) {
  return {
    method: 'POST',
    url: `${BASE_URL}${path}`,
    body: JSON.stringify(body),
    params: {
      headers: { 'Content-Type': 'application/json' },
      timeout: TIMEOUT,
      tags: { name, phase: 'setup' },
      responseCallback: http.expectedStatuses(...expectedStatuses),
    },
  }
}

/**
 * Sends one request per key, `parallel` at a time; a 503 is retried after its Retry-After
 * (at most 10 times a key). An answer not in `accepted` aborts setup with its details.
 * Returns a Map key -> final status.
 */
function runInBatches (keys, parallel, accepted, requestFor) {
  const statuses = new Map()
  const tries = new Map()
  const pending = [...keys]
  while (pending.length > 0) {
    const chunk = pending.splice(0, parallel)
    const responses = http.batch(chunk.map(requestFor))
    let waitSeconds = 0
    responses.forEach((res, i) => {
      const key = chunk[i]
      if (res.status === 503 && (tries.get(key) || 0) < 10) {
        tries.set(key, (tries.get(key) || 0) + 1)
        pending.push(key)
        waitSeconds = Math.max(waitSeconds, retryAfterSeconds(res))
      } else if (accepted.includes(res.status)) {
        statuses.set(key, res.status)
      } else {
        throw new Error(`setup: ${res.request.method} ${res.request.url} for ${key} answered ${res.status || res.error}: ${res.body}`)
      }
    })
    if (waitSeconds > 0) sleep(waitSeconds)
  }
  return statuses
}
