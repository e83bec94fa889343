/**
 * `npm run bench:burst`: a burst of logins arriving together, the lab's `login-burst` scenario:
 * every user opens its connection, from a loopback address of its own (so no address throttle or
 * pacing joins them), then all send their login at once, for unknown accounts with wrong
 * passwords; user 0 reads `GET /api/v1/me` every 5 ms meanwhile. Prints how the burst was
 * answered, how long the service took for its refusals (its own request histogram, read from
 * /metrics before and after), the hash verifies it ran and refused, what `GET /me` waited, and
 * the /healthz probes beside them.
 *
 *   npm run bench:burst -- --logins 1000                                # a service started here, as it ships
 *   npm run bench:burst -- --target http://127.0.0.1:3000 --logins 1000  # one started by hand (on 127.x)
 *
 * A login refused at the door (the service's admission, which counts the queue places held by
 * logins admitted before it) costs a fraction of a millisecond and no query.
 */
import { parseArgs } from 'node:util'
import { startDatabase } from 'tollbooth/launcher'
import { labRun, type LabOptions } from '../src/lab.js'
import type { LatencySummary } from '../src/result.js'
import { writeReports } from '../src/report/index.js'
import { machineLine } from './machine.js'
import { serviceEnv, startTollbooth } from './servers.js'

const { values: args } = parseArgs({
  options: {
    target: { type: 'string' },
    logins: { type: 'string', default: '1000' },
    out: { type: 'string' },
  },
})
const logins = Number(args.logins)
if (!Number.isInteger(logins) || logins < 1) throw new Error(`--logins must be a positive integer, not ${args.logins}`)

/** A /metrics text as `name{labels}` -> value. */
async function metricLines (url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const lines = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.length === 0) continue
    const space = line.lastIndexOf(' ')
    lines.set(line.slice(0, space), Number(line.slice(space + 1)))
  }
  return lines
}

const ms = (value: number | null | undefined): string => value == null ? '-' : value.toFixed(1)
const latency = (summary: LatencySummary | null | undefined): string => summary == null ? '-' : `p50 ${ms(summary.p50Ms)} ms, p99 ${ms(summary.p99Ms)} ms, slowest ${ms(summary.maxMs)} ms`

async function burst (url: string, options: Partial<LabOptions> = {}): Promise<void> {
  const before = await metricLines(url)
  // One user more than the logins: user 0 reads.
  const result = await labRun({ ...options, scenario: 'login-burst', target: url, load: { vus: logins + 1 } })
  const after = await metricLines(url)
  if (args.out !== undefined) await writeReports(args.out, result)
  const run = result.runs[0]
  if (run === undefined) throw new Error(`no run: ${result.warnings.join('; ')}`)
  const delta = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0)
  const loginRoute = 'tollbooth_http_request_duration_seconds_{suffix}{method="POST",route="/api/v1/auth/login",status="{status}"}'
  const route = (suffix: string, status: string): string => loginRoute.replace('{suffix}', suffix).replace('{status}', status)
  const refusedCount = delta(route('count', '503'))
  const refusedSum = delta(route('sum', '503'))
  // The setup's own logins (the reader's token) succeeded: every other verify was the burst's.
  const verifiesRan = delta('tollbooth_hash_tasks_total{kind="verify",outcome="ok"}') - delta(route('count', '200'))
  const answered = run.endpoints['POST /auth/login']
  const reads = run.endpoints['GET /me']
  const statuses = (counts: Record<string, number> | undefined, ok: number): string => [...(ok > 0 ? [`${ok} x 2xx`] : []), ...Object.entries(counts ?? {}).map(([status, count]) => `${count} x ${status}`)].join(', ')
  process.stdout.write([
    `# login burst: ${logins} logins at once against ${url}; ${machineLine()}`,
    `answered: ${statuses(answered?.errors.byStatus, answered?.ok ?? 0)}; at the client ${latency(answered?.latency)} (all sent together: the slowest is the whole burst)`,
    `the service's refusals (503): ${refusedCount}, ${refusedCount === 0 ? '-' : (refusedSum / refusedCount * 1000).toFixed(1)} ms each on average (its request histogram)`,
    `hash verifies: ${verifiesRan} ran, ${delta('tollbooth_hash_tasks_total{kind="verify",outcome="rejected"}')} refused`,
    `GET /api/v1/me during the burst: ${reads?.requests ?? 0} reads, ${latency(reads?.latency)}, ${statuses(reads?.errors.byStatus, reads?.ok ?? 0)}`,
    `/healthz during the run: ${latency(run.healthz)}; an empty server beside it: ${latency(run.healthzFloor)}`,
    ...result.warnings.map((warning) => `lab: ${warning}`),
    '',
  ].join('\n'))
}

if (args.target !== undefined) {
  await burst(args.target.replace(/\/+$/, ''))
} else {
  const database = await startDatabase({ name: 'tollbooth_bench', label: 'bench-burst' })
  try {
    const service = await startTollbooth(serviceEnv(database.url, { TOLLBOOTH_LOG_LEVEL: 'warn' }))
    try {
      await burst(service.url)
    } finally {
      await service.stop()
    }
  } finally {
    await database.stop()
  }
}
