/**
 * `npm run bench:probe`: the floor of a `/healthz` probe on this machine, measured by the lab's
 * own prober (labProbeFloor: its empty reference server, probed 10 times a second at random
 * times over keep-alive, as the lab probes a service and its floor in every run), while the
 * machine is idle, then while one busy loop per core runs at nice 10 (the hash threads'
 * default), then at nice 0 (a nice-0 neighbour: a load generator, PostgreSQL). Conditions
 * alternate for `--rounds`. What tollbooth's `/healthz` gets during a storm can only be compared
 * with these figures: no service answers faster than an empty server on the same cores.
 *
 *   npm run bench:probe -- --seconds 20 --rounds 2
 *   npm run bench:probe -- --seconds 25 --as-is    # no busy loops: beside a storm run by another command
 *
 * Measure with nothing else running and scheduler autogroups off (bench/README.md): in another
 * session, nice values do not apply across sessions. The empty server inherits this process's
 * nice value: run the bench at nice 0, as the service runs.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { parseArgs } from 'node:util'
import { labProbeFloor } from '../src/lab.js'
import { machineLine } from './machine.js'

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '20' }, rounds: { type: 'string', default: '2' }, 'as-is': { type: 'boolean', default: false } } })
const seconds = Number(values.seconds)
const cores = os.availableParallelism()

/** One process per core, each spinning on a core at `nice`. */
function busyLoops (count: number, nice: number): ChildProcess[] {
  return Array.from({ length: count }, () => spawn(process.execPath, ['-e', `require('node:os').setPriority(${nice}); for (;;) {}`], { stdio: 'ignore' }))
}

let autogroups = 'unknown'
try {
  autogroups = fs.readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim()
} catch {} // not Linux
console.log(JSON.stringify({ machine: machineLine(), nice: os.getPriority(), autogroups, loadavg: os.loadavg() }))

const conditions: Array<{ name: string, nice: number | undefined }> = values['as-is']
  ? [{ name: 'as the machine is', nice: undefined }]
  : [
      { name: 'idle', nice: undefined },
      { name: `${cores} busy loops at nice 10`, nice: 10 },
      { name: `${cores} busy loops at nice 0`, nice: 0 },
    ]
const rows: Array<{ round: number, condition: string, probes: number, failures: number, p50: number | null, p90: number | null, p99: number | null, max: number | null }> = []
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const condition of conditions) {
    const busy = condition.nice === undefined ? [] : busyLoops(cores, condition.nice)
    try {
      const { healthz, failures } = await labProbeFloor({ durationMs: seconds * 1000, ratePerSecond: 10 })
      const round2 = (ms: number | null): number | null => ms === null ? null : Math.round(ms * 100) / 100
      const row = { round, condition: condition.name, probes: healthz.count, failures, p50: round2(healthz.p50Ms), p90: round2(healthz.p90Ms), p99: round2(healthz.p99Ms), max: round2(healthz.maxMs) }
      rows.push(row)
      console.log(JSON.stringify(row))
    } finally {
      for (const child of busy) child.kill('SIGKILL')
    }
  }
}
console.log('\n| round | condition | probes | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|---|')
for (const row of rows) console.log(`| ${row.round} | ${row.condition} | ${row.probes} | ${row.p50} | ${row.p90} | ${row.p99} | ${row.max} |`)
