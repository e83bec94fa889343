/**
 * `npm run bench:crowd`: the crowd of cheap requests at 1.5 times capacity, with that capacity
 * measured on both sides of it. Three `tollbooth lab run`s of `scenarios/me-crowd.mjs`, one
 * after the other: the closed-loop capacity C (64 clients, 15 s), the open crowd at 1.5 C
 * (3 s ramp, 22 s held), and the closed loop again. The crowd's served rate is compared with
 * each capacity and with their mean: on a shared machine whose speed moves from one minute to
 * the next (bench/README, pairs S to U: C read 4,939 then 4,022 a second), a capacity measured
 * only before the crowd can make the same crowd look better or worse than it was. When the two
 * capacities differ by more than a tenth, the line says so: that round's ratio is not reliable.
 * Each round also checks the crowd's other targets (issue 7): every arrival sent and answered,
 * p99 under 1 s, `/healthz` p99 under 50 ms.
 *
 *   npm run bench:crowd -- --rounds 2 --out /tmp/crowd
 *   npm run bench:crowd -- --service-env TOLLBOOTH_WORKERS=2     # any setting of the services, repeatable
 *   npm run bench:crowd -- --http-client undici                  # the lab's generator on undici (default: its own client)
 *   npm run bench:crowd -- --lab-workers 2                       # the lab's generator on two threads (default: one)
 *
 * The lab starts the service and PostgreSQL for each run. Measure with nothing else running and
 * scheduler autogroups off (bench/README.md).
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { packageRoot } from '../src/paths.js'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '1' },
    out: { type: 'string', default: path.join(process.cwd(), 'crowd-results') },
    'service-env': { type: 'string', multiple: true, default: [] },
    'http-client': { type: 'string' },
    'lab-workers': { type: 'string' },
  },
})
/** The lab's `--service-env K=V` for each setting given: the three runs' services alike. */
const serviceEnv = (values['service-env'] ?? []).flatMap((setting) => ['--service-env', setting])
/** The lab's `--http-client` for the three runs, when given. */
const httpClient = values['http-client'] === undefined ? [] : ['--http-client', values['http-client']]
/** The lab's `--workers` (its generator's threads) for the three runs, when given. */
const labWorkers = values['lab-workers'] === undefined ? [] : ['--workers', values['lab-workers']]
const rounds = Number(values.rounds)
const out = path.resolve(String(values.out))
const tollbooth = path.join(packageRoot, 'bin', 'tollbooth.js')
const scenario = path.join(packageRoot, 'bench', 'scenarios', 'me-crowd.mjs')
/** Past this relative difference between the two capacities, the machine changed speed during the round. */
const unsteadyCapacity = 0.1

interface Summary {
  durationSeconds: number
  achievedPerSecond: number
  requestsPerSecond: number
  latency: { p99Ms: number }
  errors: { timeouts: number, connectionErrors: number, other: number }
  healthz: { p99Ms: number } | null
}
/** Each second's `dropped`: arrivals the lab could not send (its in-flight bound reached). */
interface LabRun { summary: Summary, seconds: Array<{ dropped: number }> }

/** One `lab run` into `dir`; returns its run (the lab writes result.json there). */
function labRun (dir: string, load: string[]): LabRun {
  execFileSync(process.execPath, [tollbooth, 'lab', 'run', '--scenario', scenario, ...load, ...serviceEnv, ...httpClient, ...labWorkers, '--out', dir, '--quiet'], { stdio: ['ignore', 'ignore', 'inherit'] })
  const result = JSON.parse(fs.readFileSync(path.join(dir, 'result.json'), 'utf8')) as { runs: LabRun[] }
  const [run] = result.runs
  if (run === undefined) throw new Error(`${dir}/result.json holds no run`)
  return run
}

const ratio = (served: number, capacity: number): string => (served / capacity).toFixed(3)

console.log('| round | C before | crowd offered | served | C after | served / C before | / C after | / mean | p99 | `/healthz` p99 | not sent, timeouts, connection errors | note |')
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|')
for (let round = 1; round <= rounds; round++) {
  const dir = path.join(out, `round-${round}`)
  const closed = ['--vus', '64', '--duration', '15s']
  const before = labRun(path.join(dir, 'capacity-before'), closed).summary.requestsPerSecond
  const rate = Math.round(1.5 * before)
  const crowd = labRun(path.join(dir, 'crowd'), ['--rate', '100', '--rate-stages', `3s:${rate},22s:${rate}`])
  const after = labRun(path.join(dir, 'capacity-after'), closed).summary.requestsPerSecond
  const { summary } = crowd
  const served = summary.achievedPerSecond
  const notSent = crowd.seconds.reduce((sum, second) => sum + second.dropped, 0)
  const unsteady = Math.abs(after - before) / Math.min(before, after) > unsteadyCapacity
  const misses = [
    notSent + summary.errors.timeouts + summary.errors.connectionErrors + summary.errors.other > 0 ? 'arrivals unanswered' : '',
    summary.latency.p99Ms >= 1000 ? 'p99 over 1 s' : '',
    (summary.healthz?.p99Ms ?? Infinity) >= 50 ? '/healthz p99 over 50 ms' : '',
    served / ((before + after) / 2) < 0.75 ? 'under 0.75 of C' : '',
  ].filter((miss) => miss !== '')
  const note = [unsteady ? `C moved ${Math.round(100 * Math.abs(after - before) / Math.min(before, after))} %: ratio unreliable` : '', ...misses].filter((n) => n !== '').join('; ') || 'all four targets met'
  console.log(`| ${round} | ${Math.round(before)} /s | ${rate} /s | ${Math.round(served)} /s | ${Math.round(after)} /s | ${ratio(served, before)} | ${ratio(served, after)} | ${ratio(served, (before + after) / 2)} | ${Math.round(summary.latency.p99Ms)} ms | ${summary.healthz?.p99Ms.toFixed(1) ?? '—'} ms | ${notSent}, ${summary.errors.timeouts}, ${summary.errors.connectionErrors} | ${note} |`)
}
console.log(`\nresults: ${out}`)
