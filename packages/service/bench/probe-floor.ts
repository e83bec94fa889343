/**
 * `npm run bench:probe`: the floor of a `/healthz` probe on this machine. A bare node:http
 * server (its own process, answering `{"status":"ok"}` like tollbooth's `/healthz`) is probed
 * by this process 10 times a second over keep-alive, as the lab probes a service, while the
 * machine is idle, then while one busy loop per core runs at nice 10 (the hash threads'
 * default), then at nice 0 (a nice-0 neighbour: a load generator, PostgreSQL). Conditions
 * alternate for `--rounds`. What tollbooth's `/healthz` gets during a storm can only be
 * compared with these figures: no service answers faster than an empty server on the same
 * cores.
 *
 *   npm run bench:probe -- --seconds 20 --rounds 2
 *   npm run bench:probe -- --seconds 25 --as-is    # no busy loops: beside a storm run by another command
 *
 * Measure with nothing else running and scheduler autogroups off (bench/README.md): in
 * another session, nice values do not apply across sessions.
 */
import { fork, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import os from 'node:os'
import { once } from 'node:events'
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'

const role = process.argv[2]

if (role === '--serve') {
  const server = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
    response.end('{"status":"ok"}')
  })
  server.listen(0, '127.0.0.1', () => {
    const address = server.address()
    if (address !== null && typeof address === 'object') process.send?.({ port: address.port })
  })
} else if (role === '--spin') {
  os.setPriority(Number(process.argv[3]))
  for (;;) { /* one core, all the time */ }
} else {
  await main()
}

interface Percentiles { count: number, failures: number, p50: number, p90: number, p99: number, max: number }

function percentiles (latenciesMs: number[], failures: number): Percentiles {
  const sorted = [...latenciesMs].sort((a, b) => a - b)
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
  const round = (ms: number): number => Math.round(ms * 100) / 100
  return { count: sorted.length, failures, p50: round(at(0.5)), p90: round(at(0.9)), p99: round(at(0.99)), max: round(sorted.at(-1) ?? Number.NaN) }
}

/** Probes at 10/s for `seconds`; latency counts from the intended send time (no coordinated omission). */
async function probe (port: number, seconds: number): Promise<Percentiles> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
  const latenciesMs: number[] = []
  let failures = 0
  const intervalMs = 100
  const start = performance.now()
  const pending: Array<Promise<void>> = []
  for (let i = 0; i < seconds * 1000 / intervalMs; i++) {
    const intended = start + i * intervalMs
    const wait = intended - performance.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    pending.push(new Promise<void>((resolve) => {
      http.get({ host: '127.0.0.1', port, path: '/healthz', agent }, (response) => {
        response.resume()
        response.on('end', () => {
          if (response.statusCode === 200) latenciesMs.push(performance.now() - intended)
          else failures++
          resolve()
        })
      }).on('error', () => { failures++; resolve() })
    }))
  }
  await Promise.all(pending)
  agent.destroy()
  return percentiles(latenciesMs, failures)
}

function spinners (count: number, nice: number): ChildProcess[] {
  const self = fileURLToPath(import.meta.url)
  return Array.from({ length: count }, () => fork(self, ['--spin', String(nice)], { stdio: 'ignore' }))
}

async function main (): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '20' }, rounds: { type: 'string', default: '2' }, 'as-is': { type: 'boolean', default: false } } })
  const seconds = Number(values.seconds)
  const rounds = Number(values.rounds)
  const cores = os.availableParallelism()
  let autogroups = 'unknown'
  try {
    const { readFileSync } = await import('node:fs')
    autogroups = readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim()
  } catch { /* not Linux */ }
  // The server inherits this nice value: run the bench at nice 0 (not under `nice`), as the service runs.
  console.log(JSON.stringify({ cores, model: os.cpus()[0]?.model, node: process.version, nice: os.getPriority(), autogroups, loadavg: os.loadavg() }))

  const server = fork(fileURLToPath(import.meta.url), ['--serve'], { stdio: 'inherit' })
  const [{ port }] = await once(server, 'message') as [{ port: number }]
  const conditions: Array<{ name: string, nice: number | undefined }> = values['as-is']
    ? [{ name: 'as the machine is', nice: undefined }]
    : [
        { name: 'idle', nice: undefined },
        { name: `${cores} busy loops at nice 10`, nice: 10 },
        { name: `${cores} busy loops at nice 0`, nice: 0 },
      ]
  const rows: Array<{ round: number, condition: string } & Percentiles> = []
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const condition of conditions) {
        const busy = condition.nice === undefined ? [] : spinners(cores, condition.nice)
        try {
          const row = { round, condition: condition.name, ...await probe(port, seconds) }
          rows.push(row)
          console.log(JSON.stringify(row))
        } finally {
          for (const child of busy) child.kill('SIGKILL')
        }
      }
    }
  } finally {
    server.kill()
  }
  console.log('\n| round | condition | probes | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|---|')
  for (const row of rows) console.log(`| ${row.round} | ${row.condition} | ${row.count} | ${row.p50} | ${row.p90} | ${row.p99} | ${row.max} |`)
}
