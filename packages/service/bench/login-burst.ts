/**
 * `npm run bench:burst -- --target URL`: a burst of logins arriving together, against a service
 * started by hand with `TOLLBOOTH_TRUST_PROXY=127.0.0.1` (each login claims an address of its
 * own in X-Forwarded-For, as a crowd behind a load balancer would, so no address throttle or
 * pacing joins them). The connections are opened and warmed first, then every login is sent at
 * once, for unknown emails with wrong passwords; a signed-in client reads `GET /api/v1/me` every
 * 5 ms meanwhile. Prints how the burst was answered, how long the service took for its refusals
 * (from its own request histogram), the hash tasks it ran and refused, and what `GET /me` waited.
 *
 *   TOLLBOOTH_TRUST_PROXY=127.0.0.1 npm start                   # in one terminal
 *   npm run bench:burst -- --target http://127.0.0.1:3000 --logins 1000
 *
 * A login refused at the door (hash-admission.ts, with the places held by logins admitted
 * before it: scheduler.ts `HashReservation`) costs a fraction of a millisecond and no query; one
 * admitted costs a database lookup before the queue can refuse it.
 */
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'

const { values: args } = parseArgs({
  options: {
    target: { type: 'string', default: 'http://127.0.0.1:3000' },
    logins: { type: 'string', default: '1000' },
  },
})
const base = args.target.replace(/\/$/, '')
const logins = Number(args.logins)
if (!Number.isInteger(logins) || logins < 1) throw new Error(`--logins must be a positive integer, not ${args.logins}`)

async function metricLines (): Promise<Map<string, number>> {
  const text = await (await request(`${base}/metrics`)).body.text()
  const lines = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.length === 0) continue
    const space = line.lastIndexOf(' ')
    lines.set(line.slice(0, space), Number(line.slice(space + 1)))
  }
  return lines
}

function quantile (sorted: number[], q: number): string {
  const value = sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  return value === undefined ? '-' : value.toFixed(1)
}

const email = `burst-${Date.now()}@example.com`
const registered = await request(`${base}/api/v1/auth/register`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ email, password: 'a long enough passphrase for the burst' }),
})
if (registered.statusCode !== 201) throw new Error(`register: ${registered.statusCode} ${await registered.body.text()}`)
const { accessToken } = await registered.body.json() as { accessToken: string }

const crowd = new Agent({ connections: logins, pipelining: 1 })
const reader = new Agent({ connections: 1 })
// Every connection opened before the burst: what arrives together is the logins, not the handshakes.
await Promise.all(Array.from({ length: logins }, async () => { await (await request(`${base}/healthz`, { dispatcher: crowd })).body.text() }))

const before = await metricLines()
const reading = { on: true }
const reads: Array<{ at: number, ms: number, status: number }> = []
const readLoop = (async () => {
  while (reading.on) {
    const at = performance.now()
    const response = await request(`${base}/api/v1/me`, { dispatcher: reader, headers: { authorization: `Bearer ${accessToken}` } })
    await response.body.text()
    reads.push({ at, ms: performance.now() - at, status: response.statusCode })
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
})()
await new Promise((resolve) => setTimeout(resolve, 200))

const sentAt = performance.now()
const statuses = new Map<number, number>()
const answeredMs: number[] = []
await Promise.all(Array.from({ length: logins }, async (_, i) => {
  const response = await request(`${base}/api/v1/auth/login`, {
    method: 'POST',
    dispatcher: crowd,
    headers: { 'content-type': 'application/json', 'x-forwarded-for': `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` },
    body: JSON.stringify({ email: `nobody-${i}@example.com`, password: 'not the password' }),
  })
  await response.body.text()
  statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1)
  answeredMs.push(performance.now() - sentAt)
}))
const wallMs = performance.now() - sentAt
await new Promise((resolve) => setTimeout(resolve, 300))
reading.on = false
await readLoop
const after = await metricLines()
await crowd.close()
await reader.close()

const delta = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0)
const refusedCount = delta('tollbooth_http_request_duration_seconds_count{method="POST",route="/api/v1/auth/login",status="503"}')
const refusedSum = delta('tollbooth_http_request_duration_seconds_sum{method="POST",route="/api/v1/auth/login",status="503"}')
answeredMs.sort((a, b) => a - b)
const during = reads.filter((read) => read.at >= sentAt && read.at <= sentAt + wallMs)
const readMs = during.map((read) => read.ms).sort((a, b) => a - b)

process.stdout.write([
  `# login burst: ${logins} logins at once against ${base}`,
  `answered in ${wallMs.toFixed(0)} ms: ${[...statuses].map(([status, count]) => `${count} x ${status}`).join(', ')}; at the client p50 ${quantile(answeredMs, 0.5)} ms, p99 ${quantile(answeredMs, 0.99)} ms`,
  `the service's refusals (503): ${refusedCount}, ${refusedCount === 0 ? '-' : (refusedSum / refusedCount * 1000).toFixed(1)} ms each on average (its request histogram)`,
  `hash verifies: ${delta('tollbooth_hash_tasks_total{kind="verify",outcome="ok"}')} ran, ${delta('tollbooth_hash_tasks_total{kind="verify",outcome="rejected"}')} refused`,
  `GET /api/v1/me during the burst: ${during.length} reads, p50 ${quantile(readMs, 0.5)} ms, slowest ${readMs.length === 0 ? '-' : (readMs[readMs.length - 1] ?? 0).toFixed(1)} ms, statuses ${[...new Set(during.map((read) => read.status))].join(', ')}`,
  '',
].join('\n'))
