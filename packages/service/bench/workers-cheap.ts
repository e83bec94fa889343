/**
 * `npm run bench:workers`: cheap requests per second (`GET /api/v1/me` with a token, a closed
 * loop of `--connections` clients) against `tollbooth serve --workers 1` and `--workers 2`,
 * on one embedded PostgreSQL, each for `--duration` seconds, alternating for `--rounds`.
 * The load generator runs on the same machine: on a small one it competes with the workers
 * for the cores, so the figures are a floor of what the workers can do, not a ceiling.
 *
 *   npm run bench:workers -- --duration 10 --connections 32 --rounds 2
 */
import os from 'node:os'
import { parseArgs } from 'node:util'
import { Pool } from 'undici'
import { startDatabase, startServe } from '../src/launcher/index.js'
import { detectCpuBudget } from '../src/hashing/index.js'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '2' },
    workers: { type: 'string', default: '1,2' },
  },
})
const durationMs = Number(values.duration) * 1000
const connections = Number(values.connections)
const rounds = Number(values.rounds)
const workerCounts = String(values.workers).split(',').map(Number)

async function load (url: string, token: string): Promise<{ ok: number, other: number, perSecond: number }> {
  const pool = new Pool(url, { connections, pipelining: 1 })
  let ok = 0
  let other = 0
  const end = Date.now() + durationMs
  const client = async (): Promise<void> => {
    while (Date.now() < end) {
      const res = await pool.request({ method: 'GET', path: '/api/v1/me', headers: { authorization: `Bearer ${token}` } })
      await res.body.dump()
      if (res.statusCode === 200) ok++
      else other++
    }
  }
  const started = Date.now()
  await Promise.all(Array.from({ length: connections }, client))
  const seconds = (Date.now() - started) / 1000
  await pool.close()
  return { ok, other, perSecond: ok / seconds }
}

const database = await startDatabase({ label: 'bench-workers' })
console.log(JSON.stringify({ cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, cpuBudget: detectCpuBudget().cpus, loadavg: os.loadavg() }))
try {
  for (let round = 1; round <= rounds; round++) {
    for (const workers of workerCounts) {
      const service = await startServe({
        env: { ...process.env, DATABASE_URL: database.url, TOLLBOOTH_KEY_ENCRYPTION_KEY: '0eyOuhrOkSJ1DMKb8xLs1s99iEg+Lz4Yfp16i1bgY+4=', PORT: '0', TOLLBOOTH_LOG_LEVEL: 'warn', TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0', TOLLBOOTH_HASH_ALGORITHM: 'bcrypt', TOLLBOOTH_BCRYPT_COST: '4' },
        args: ['--workers', String(workers)],
      })
      try {
        const registered = await fetch(`${service.url}/api/v1/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `bench.${workers}.${round}.${Date.now()}@example.com`, password: 'bench password 1' }) })
        const { accessToken } = await registered.json() as { accessToken: string }
        await load(service.url, accessToken) // warm-up, not counted
        const loadBefore = os.loadavg()[0]
        const result = await load(service.url, accessToken)
        console.log(JSON.stringify({ round, workers, connections, durationS: durationMs / 1000, perSecond: Math.round(result.perSecond), ok: result.ok, other: result.other, loadavg1Before: loadBefore, loadavg1After: os.loadavg()[0] }))
      } finally {
        await service.stop()
      }
    }
  }
} finally {
  await database.stop()
}
