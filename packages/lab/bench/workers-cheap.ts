/**
 * `npm run bench:workers`: cheap requests per second (the lab's `me-crowd` as a closed loop of
 * `--connections` users) against `tollbooth serve` with TOLLBOOTH_WORKERS 1 and 2, services the
 * lab starts on one embedded PostgreSQL, each for `--warmup` then `--duration` seconds,
 * alternating for `--rounds`. The lab runs on the same machine: on a small one its generator
 * competes with the workers for the cores, so the figures are a floor of what the workers can do,
 * not a ceiling.
 *
 *   npm run bench:workers -- --duration 10 --connections 32 --rounds 2
 */
import os from 'node:os'
import { parseArgs } from 'node:util'
import { startDatabase } from 'tollbooth/launcher'
import { labRun } from '../src/lab.js'
import { machineLine } from './machine.js'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '2' },
    workers: { type: 'string', default: '1,2' },
  },
})
const durationSeconds = Number(values.duration)
const warmupSeconds = Number(values.warmup)
const connections = Number(values.connections)
const workerCounts = String(values.workers).split(',').map(Number)

console.log(JSON.stringify({ machine: machineLine(), loadavg: os.loadavg() }))
const database = await startDatabase({ name: 'tollbooth_bench', label: 'bench-workers' })
try {
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const workers of workerCounts) {
      const loadavg1Before = os.loadavg()[0]
      const result = await labRun({
        scenario: 'me-crowd',
        databaseUrl: database.url,
        // bcrypt cost 4: the setup's hashes are quick; GET /me never hashes.
        serviceEnv: { TOLLBOOTH_WORKERS: String(workers), TOLLBOOTH_HASH_ALGORITHM: 'bcrypt', TOLLBOOTH_BCRYPT_COST: '4', TOLLBOOTH_LOG_LEVEL: 'warn' },
        load: { vus: connections, durationMs: (warmupSeconds + durationSeconds) * 1000, healthzProbeRate: 0 },
      })
      const run = result.runs[0]
      if (run === undefined) throw new Error(`--workers ${workers}: no run (${result.warnings.join('; ')})`)
      // The seconds after the warm-up.
      const firstT = run.seconds.find((sample) => sample.offered > 0)?.t ?? 1
      const measured = run.seconds.filter((sample) => sample.t >= firstT + warmupSeconds && sample.t < firstT + warmupSeconds + durationSeconds)
      const ok = measured.reduce((sum, sample) => sum + sample.all.ok, 0)
      const other = measured.reduce((sum, sample) => sum + sample.all.requests - sample.all.ok, 0)
      console.log(JSON.stringify({ round, workers, connections, durationS: durationSeconds, perSecond: Math.round(ok / durationSeconds), ok, other, loadavg1Before, loadavg1After: os.loadavg()[0], warnings: result.warnings }))
    }
  }
} finally {
  await database.stop()
}
