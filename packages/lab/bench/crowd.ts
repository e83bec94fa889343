/**
 * `npm run bench:crowd`: the crowd of cheap requests at 1.5 times capacity, with that capacity
 * measured on both sides of it. Three lab runs of the `me-crowd` scenario, one after the other:
 * the closed-loop capacity C (64 users, 15 s), the open crowd at 1.5 C (3 s ramp, 22 s held), and
 * the closed loop again. The crowd's served rate is compared with each capacity and with their
 * mean: on a shared machine whose speed moves from one minute to the next (bench/README, pairs S
 * to U: C read 4,939 then 4,022 a second), a capacity measured only before the crowd can make the
 * same crowd look better or worse than it was. When the two capacities differ by more than a
 * tenth, the line says so: that round's ratio is not reliable. Each round also checks the crowd's
 * other targets (issue 7): every arrival sent and answered, p99 under 1 s, `/healthz` p99 under 50 ms.
 *
 *   npm run bench:crowd -- --rounds 2 --out /tmp/crowd
 *   npm run bench:crowd -- --service-env TOLLBOOTH_WORKERS=2     # any setting of the services, repeatable
 *   npm run bench:crowd -- --http-client undici                  # the lab's generator on undici (default: its own client)
 *   npm run bench:crowd -- --lab-workers 2                       # the lab's generator on two threads (default: one)
 *
 * The lab starts the service and PostgreSQL for each run, and writes each run's reports under
 * --out. Measure with nothing else running and scheduler autogroups off (bench/README.md).
 */
import path from 'node:path'
import { parseArgs } from 'node:util'
import { httpClients, type HttpClientKind } from '../src/http/index.js'
import { labRun, type LoadOptions } from '../src/lab.js'
import { writeReports } from '../src/report/index.js'
import type { RunResult } from '../src/result.js'
import { machineLine } from './machine.js'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '1' },
    out: { type: 'string', default: path.join(process.cwd(), 'crowd-results') },
    'service-env': { type: 'string', multiple: true, default: [] },
    'http-client': { type: 'string' },
    'lab-workers': { type: 'string' },
  },
})
/** The services' settings, alike in the three runs: `--service-env K=V`, repeatable. */
const serviceEnv = Object.fromEntries((values['service-env'] ?? []).map((setting) => {
  const equals = setting.indexOf('=')
  if (equals <= 0) throw new Error(`--service-env takes KEY=VALUE, not ${setting}`)
  return [setting.slice(0, equals), setting.slice(equals + 1)]
}))
const httpClient = values['http-client']
if (httpClient !== undefined && !(httpClients as readonly string[]).includes(httpClient)) throw new Error(`--http-client: one of ${httpClients.join(', ')}`)
/** The lab's load options of the three runs: its generator's client and threads, when given. */
const generator: Partial<LoadOptions> = {
  ...(httpClient === undefined ? {} : { httpClient: httpClient as HttpClientKind }),
  ...(values['lab-workers'] === undefined ? {} : { workers: Number(values['lab-workers']) }),
}
const out = path.resolve(String(values.out))
/** Past this relative difference between the two capacities, the machine changed speed during the round. */
const unsteadyCapacity = 0.1

/** One lab run of me-crowd, its reports written to `dir`. */
async function crowdRun (dir: string, load: LoadOptions): Promise<RunResult> {
  const result = await labRun({ scenario: 'me-crowd', serviceEnv, load: { ...load, ...generator } })
  await writeReports(dir, result)
  const [run] = result.runs
  if (run === undefined) throw new Error(`${dir}: no run (${result.warnings.join('; ')})`)
  return run
}

const ratio = (served: number, capacity: number): string => (served / capacity).toFixed(3)

console.log(`${machineLine()}\n`)
console.log('| round | C before | crowd offered | served | C after | served / C before | / C after | / mean | p99 | `/healthz` p99 | not sent, timeouts, connection errors | note |')
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|')
for (let round = 1; round <= Number(values.rounds); round++) {
  const dir = path.join(out, `round-${round}`)
  const closed: LoadOptions = { vus: 64, durationMs: 15_000 }
  const before = (await crowdRun(path.join(dir, 'capacity-before'), closed)).summary.requestsPerSecond
  const rate = Math.round(1.5 * before)
  const crowd = await crowdRun(path.join(dir, 'crowd'), { rate: 100, rateStages: [{ durationMs: 3000, target: rate }, { durationMs: 22_000, target: rate }] })
  const after = (await crowdRun(path.join(dir, 'capacity-after'), closed)).summary.requestsPerSecond
  const { summary } = crowd
  const served = summary.achievedPerSecond
  const notSent = crowd.seconds.reduce((sum, second) => sum + second.dropped, 0)
  const unsteady = Math.abs(after - before) / Math.min(before, after) > unsteadyCapacity
  const misses = [
    notSent + summary.errors.timeouts + summary.errors.connectionErrors + summary.errors.other > 0 ? 'arrivals unanswered' : '',
    (summary.latency.p99Ms ?? Infinity) >= 1000 ? 'p99 over 1 s' : '',
    (summary.healthz?.p99Ms ?? Infinity) >= 50 ? '/healthz p99 over 50 ms' : '',
    served / ((before + after) / 2) < 0.75 ? 'under 0.75 of C' : '',
  ].filter((miss) => miss !== '')
  const note = [unsteady ? `C moved ${Math.round(100 * Math.abs(after - before) / Math.min(before, after))} %: ratio unreliable` : '', ...misses].filter((n) => n !== '').join('; ') || 'all four targets met'
  console.log(`| ${round} | ${Math.round(before)} /s | ${rate} /s | ${Math.round(served)} /s | ${Math.round(after)} /s | ${ratio(served, before)} | ${ratio(served, after)} | ${ratio(served, (before + after) / 2)} | ${Math.round(summary.latency.p99Ms ?? 0)} ms | ${summary.healthz?.p99Ms?.toFixed(1) ?? '—'} ms | ${notSent}, ${summary.errors.timeouts}, ${summary.errors.connectionErrors} | ${note} |`)
}
console.log(`\nresults: ${out}`)
