/**
 * Checks what `tollbooth calibrate` printed, independently of it: the given parameters on an
 * engine with every thread of the CPU budget, a batch of verifies queued at once so every thread
 * stays busy, repeated `--runs` times; each run's median verify (timed inside the worker) and
 * its throughput, against the target.
 *
 *   node dist/bench/calibrate-check.js --argon2 72704,1,1 --target-ms 250
 *   node dist/bench/calibrate-check.js --bcrypt 12 --runs 5 --per-thread 10 --json
 *   node dist/bench/calibrate-check.js --scrypt 131072,8,1
 */
import os from 'node:os'
import { parseArgs } from 'node:util'
import { createPasswordEngine, defaultPolicy, detectCpuBudget, type HashPolicy } from '../src/hashing/index.js'

const { values: args } = parseArgs({
  options: {
    argon2: { type: 'string' },
    bcrypt: { type: 'string' },
    scrypt: { type: 'string' },
    'target-ms': { type: 'string', default: '250' },
    runs: { type: 'string', default: '5' },
    'per-thread': { type: 'string', default: '10' },
    threads: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
})

function numbers (text: string, count: number, flag: string): number[] {
  const values = text.split(',').map(Number)
  if (values.length !== count || !values.every((v) => Number.isSafeInteger(v) && v > 0)) throw new Error(`--${flag} takes ${count} whole numbers separated by commas, got "${text}"`)
  return values
}

function policyFromArgs (): { policy: HashPolicy, params: string } {
  if (args.argon2 !== undefined) {
    const [memoryKiB = 0, timeCost = 0, parallelism = 0] = numbers(args.argon2, 3, 'argon2')
    return { policy: { ...defaultPolicy, algorithm: 'argon2id', argon2: { memoryKiB, timeCost, parallelism } }, params: `argon2id m=${memoryKiB} t=${timeCost} p=${parallelism}` }
  }
  if (args.bcrypt !== undefined) {
    const [cost = 0] = numbers(args.bcrypt, 1, 'bcrypt')
    return { policy: { ...defaultPolicy, algorithm: 'bcrypt', bcrypt: { cost } }, params: `bcrypt cost ${cost}` }
  }
  if (args.scrypt !== undefined) {
    const [N = 0, r = 0, p = 0] = numbers(args.scrypt, 3, 'scrypt')
    return { policy: { ...defaultPolicy, algorithm: 'scrypt', scrypt: { N, r, p } }, params: `scrypt N=${N} r=${r} p=${p}` }
  }
  throw new Error('give the parameters: --argon2 M,T,P or --bcrypt COST or --scrypt N,R,P')
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] ?? NaN : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2
}

interface Run {
  medianMs: number
  verifiesPerSecond: number
  offTarget: number
}

async function main (): Promise<void> {
  const { policy, params } = policyFromArgs()
  const targetMs = Number(args['target-ms'])
  const runs = Number(args.runs)
  const perThread = Number(args['per-thread'])
  const cpuBudget = detectCpuBudget()
  // Nice 0 as calibrate measures: the hash's own time, not what other work on the machine leaves it.
  const engine = await createPasswordEngine({ policy, maxQueue: 1_000_000, threadNice: 0, ...(args.threads === undefined ? {} : { threads: Number(args.threads) }) })
  const threads = engine.stats().threads
  const results: Run[] = []
  try {
    const password = 'calibration check'
    const stored = await engine.hash(password)
    const batch = async (size: number): Promise<void> => { await Promise.all(Array.from({ length: size }, async () => await engine.verify(password, stored))) }
    await batch(threads) // warm every thread
    for (let run = 0; run < runs; run++) {
      const runMs: number[] = []
      const stop = engine.onTask((event) => { if (event.kind === 'verify' && event.outcome === 'ok') runMs.push(event.runMs) })
      const started = performance.now()
      await batch(threads * perThread)
      const wallMs = performance.now() - started
      stop()
      const medianMs = median(runMs)
      results.push({ medianMs, verifiesPerSecond: runMs.length * 1000 / wallMs, offTarget: (medianMs - targetMs) / targetMs })
    }
  } finally {
    await engine.close()
  }
  const machine = { cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown CPU', cores: os.cpus().length, cpuBudget, node: process.version }
  if (args.json === true) {
    process.stdout.write(JSON.stringify({ params, targetMs, threads, perThread, machine, runs: results }, null, 2) + '\n')
    return
  }
  const lines = [
    `# calibrate-check: ${params}, ${threads} threads busy, ${threads * perThread} verifies a run; ${machine.cpuModel}, ${machine.cores} cores, CPU budget ${cpuBudget.cpus} (${cpuBudget.source}), Node ${machine.node}`,
    '',
    '| run | median verify, all threads busy | off the target | verifies/s (all threads) | logins/s per core |',
    '|---|---|---|---|---|',
    ...results.map((r, i) => `| ${i + 1} | ${r.medianMs.toFixed(1)} ms | ${r.offTarget >= 0 ? '+' : ''}${(r.offTarget * 100).toFixed(1)} % | ${r.verifiesPerSecond.toFixed(1)} | ${(r.verifiesPerSecond / threads).toFixed(1)} |`),
    '',
    `target ${targetMs} ms; runs within ±20 %: ${results.filter((r) => Math.abs(r.offTarget) <= 0.2).length} of ${results.length}`,
  ]
  process.stdout.write(lines.join('\n') + '\n')
}

await main()
