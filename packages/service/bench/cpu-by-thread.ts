/**
 * `npm run bench:threads`: where the machine's CPU went while a load ran, thread by thread, from
 * /proc (Linux). Every thread of every process is read twice, `--seconds` apart, and its CPU
 * (user + system) is put in a group: the service's main thread, its threads at a positive nice
 * (tollbooth's hash threads), its other threads (libuv's pool, where the `libuv` strategy hashes;
 * V8's helpers), PostgreSQL, the load lab's main thread and its other threads, everything else;
 * and the idle time. With `--metrics`, the service's completed verifies in the same interval, and
 * the CPU of its hashing threads per verify.
 *
 *   npm run bench:threads -- --pid 1234 --after 10 --seconds 20 --metrics http://127.0.0.1:3000/metrics
 *
 * Start it beside a load (a `lab run --target` of the service), `--after` seconds past its
 * start so the window misses the setup. Measure with nothing else running and scheduler
 * autogroups off (bench/README.md).
 *
 * Limits: a thread that ended inside the window is not counted (a PostgreSQL backend that
 * disconnected, say): the groups then add up to less than the CPU the machine used, which the
 * last line shows. Only the threads of `--pid` count as the service: the processes it starts
 * (the `spawn` and `cluster` strategies, `--workers`) fall in "everything else".
 */
import fs from 'node:fs'
import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'

interface ThreadSample { pid: number, tid: number, cpuTicks: number, nice: number, commandLine: string }

const { values } = parseArgs({
  options: {
    pid: { type: 'string' },
    seconds: { type: 'string', default: '20' },
    after: { type: 'string', default: '0' },
    metrics: { type: 'string' },
  },
})
if (values.pid === undefined) throw new Error('--pid: the service process to attribute threads to')
const servicePid = Number(values.pid)
const clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

function readThreads (): Map<string, ThreadSample> {
  const threads = new Map<string, ThreadSample>()
  for (const pid of fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    let commandLine = ''
    let tids: string[] = []
    try {
      commandLine = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
      tids = fs.readdirSync(`/proc/${pid}/task`)
    } catch { continue } // gone meanwhile
    for (const tid of tids) {
      try {
        const text = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
        const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
        // proc(5) field numbers minus 3: utime 14, stime 15, nice 19.
        const cpuTicks = Number(fields[11]) + Number(fields[12])
        threads.set(`${pid}/${tid}`, { pid: Number(pid), tid: Number(tid), cpuTicks, nice: Number(fields[16]), commandLine })
      } catch { /* the thread ended meanwhile */ }
    }
  }
  return threads
}

function groupOf (thread: ThreadSample): string {
  if (thread.pid === servicePid) {
    if (thread.tid === servicePid) return 'service: main thread'
    return thread.nice > 0 ? `service: threads at nice ${thread.nice}` : 'service: other threads'
  }
  if (thread.commandLine.startsWith('postgres') || thread.commandLine.includes('/postgres ')) return 'postgresql'
  if (/\blab (run|compare|knee|scale)\b/.test(thread.commandLine)) return thread.tid === thread.pid ? 'lab: main thread' : 'lab: other threads'
  return 'everything else'
}

/** Idle and total jiffies of the whole machine. */
function machineTicks (): { idle: number, total: number } {
  const fields = (fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 9).map(Number)
  return { idle: (fields[3] ?? 0) + (fields[4] ?? 0), total: fields.reduce((sum, value) => sum + value, 0) }
}

async function verifiesDone (): Promise<number | undefined> {
  if (values.metrics === undefined) return undefined
  const text = await (await fetch(values.metrics)).text()
  const line = text.split('\n').find((row) => row.startsWith('tollbooth_hash_tasks_total{kind="verify",outcome="ok"}'))
  return line === undefined ? undefined : Number(line.split(' ').at(-1))
}

await sleep(Number(values.after) * 1000)
const verifiesBefore = await verifiesDone()
const before = readThreads()
const machineBefore = machineTicks()
const startedAt = performance.now()
await sleep(Number(values.seconds) * 1000)
const after = readThreads()
const machineAfter = machineTicks()
const elapsed = (performance.now() - startedAt) / 1000
const verifiesAfter = await verifiesDone()

const cores = new Map<string, number>()
for (const [key, thread] of after) {
  const used = (thread.cpuTicks - (before.get(key)?.cpuTicks ?? 0)) / clockTicks / elapsed
  cores.set(groupOf(thread), (cores.get(groupOf(thread)) ?? 0) + used)
}
const cpus = (machineAfter.total - machineBefore.total) / clockTicks / elapsed
const idle = (machineAfter.idle - machineBefore.idle) / clockTicks / elapsed
console.log(`${elapsed.toFixed(1)} s on ${cpus.toFixed(2)} CPUs, in cores:`)
for (const [group, used] of [...cores].sort((a, b) => b[1] - a[1])) console.log(`  ${used.toFixed(3)}  ${group}`)
console.log(`  ${idle.toFixed(3)}  idle`)
const counted = [...cores.values()].reduce((sum, used) => sum + used, 0) + idle
console.log(`  ${(cpus - counted).toFixed(3)}  not counted (threads that ended in the window, rounding)`)
if (verifiesBefore !== undefined && verifiesAfter !== undefined) {
  const perSecond = (verifiesAfter - verifiesBefore) / elapsed
  const hashing = [...cores].filter(([group]) => group.startsWith('service:') && group !== 'service: main thread').reduce((sum, [, used]) => sum + used, 0)
  console.log(`verifies: ${perSecond.toFixed(2)}/s; the service's threads other than its main one: ${(hashing / perSecond * 1000).toFixed(1)} ms of CPU per verify`)
}
