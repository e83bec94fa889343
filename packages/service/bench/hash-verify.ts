/**
 * `npm run bench:hash`: what one verify costs on this machine, and how close the
 * pool gets to the physical limit (threads / single-thread verify time).
 *
 * For each profile: the median run time of N verifies on an engine with one
 * worker thread (measured inside the worker, around the hash alone), then a
 * batch of concurrent verifies through an engine with every thread of the CPU
 * budget, as ops/s and as a ratio to threads / median.
 *
 *   npm run bench:hash
 *   npm run bench:hash -- --runs 30 --per-thread 40 --profile bcrypt10
 *   npm run bench:hash -- --json
 */
import { spawnSync } from 'node:child_process'
import os from 'node:os'
import { parseArgs } from 'node:util'
import { createPasswordEngine, defaultPolicy, detectCpuBudget, type CpuBudget, type HashPolicy } from '../src/hashing/index.js'
import { hashMallocEnv, missingHashMallocEnv } from '../src/machine/index.js'

interface Profile {
  name: string
  policy: HashPolicy
}

const profiles: Record<string, Profile> = {
  'argon2-owasp': { name: 'argon2id m=19456 t=2 p=1 (OWASP, default)', policy: defaultPolicy },
  'argon2-light': { name: 'argon2id m=7168 t=5 p=1', policy: { ...defaultPolicy, argon2: { memoryKiB: 7168, timeCost: 5, parallelism: 1 } } },
  bcrypt10: { name: 'bcrypt cost 10', policy: { ...defaultPolicy, algorithm: 'bcrypt' } },
  'scrypt-default': { name: 'scrypt N=2^15 r=8 p=1 (default)', policy: { ...defaultPolicy, algorithm: 'scrypt' } },
  'scrypt-better-auth': { name: 'scrypt N=2^14 r=16 p=1 (better-auth\'s setting)', policy: { ...defaultPolicy, algorithm: 'scrypt', scrypt: { N: 16384, r: 16, p: 1 } } },
}

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    'per-thread': { type: 'string', default: '20' },
    profile: { type: 'string', multiple: true },
    json: { type: 'boolean', default: false },
  },
})

function positiveInt (text: string, name: string): number {
  const n = Number(text)
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a whole number >= 1`)
  return n
}

interface ProfileResult {
  profile: string
  name: string
  singleThread: { runs: number, medianRunMs: number, medianWallMs: number, minRunMs: number, maxRunMs: number }
  pool: { threads: number, verifies: number, wallMs: number, opsPerSecond: number, idealOpsPerSecond: number, ratio: number }
}

interface BenchResult {
  machine: { cpuModel: string, cores: number, cpuBudget: CpuBudget, node: string, platform: string }
  results: ProfileResult[]
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] ?? 0 : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

async function measure (key: string, profile: Profile, runs: number, perThread: number): Promise<ProfileResult> {
  const password = 'correct horse battery staple'

  // 1. One worker thread, one verify at a time: the cost of a verify on this machine.
  const single = await createPasswordEngine({ policy: profile.policy, threads: 1 })
  const runMs: number[] = []
  const wallMs: number[] = []
  let stored: string
  try {
    stored = await single.hash(password)
    single.onTask((event) => { runMs.push(event.runMs) })
    for (let i = 0; i < runs; i++) {
      const started = performance.now()
      const { match } = await single.verify(password, stored)
      wallMs.push(performance.now() - started)
      if (!match) throw new Error('the verify did not match')
    }
  } finally {
    await single.close()
  }
  const medianRunMs = median(runMs)

  // 2. Every thread of the budget, all verifies submitted at once (no deadline).
  const pool = await createPasswordEngine({ policy: profile.policy, maxQueue: 1_000_000 })
  const threads = pool.stats().threads
  const verifies = threads * perThread
  let poolWallMs: number
  try {
    const started = performance.now()
    await Promise.all(Array.from({ length: verifies }, async () => await pool.verify(password, stored)))
    poolWallMs = performance.now() - started
  } finally {
    await pool.close()
  }
  const opsPerSecond = verifies / (poolWallMs / 1000)
  const idealOpsPerSecond = threads / (medianRunMs / 1000)
  return {
    profile: key,
    name: profile.name,
    singleThread: { runs, medianRunMs, medianWallMs: median(wallMs), minRunMs: Math.min(...runMs), maxRunMs: Math.max(...runMs) },
    pool: { threads, verifies, wallMs: poolWallMs, opsPerSecond, idealOpsPerSecond, ratio: opsPerSecond / idealOpsPerSecond },
  }
}

function renderText (result: BenchResult): string {
  const { machine } = result
  const lines = [
    `# hash-verify: ${machine.cpuModel}, ${machine.cores} cores, CPU budget ${machine.cpuBudget.cpus} (${machine.cpuBudget.source}${machine.cpuBudget.quota === undefined ? '' : `, quota ${machine.cpuBudget.quota}`}), Node ${machine.node} ${machine.platform}`,
    `# glibc malloc settings for hashing (src/hashing/malloc-env.ts): ${Object.keys(hashMallocEnv).map((name) => `${name}=${process.env[name] ?? 'unset'}`).join(' ')}`,
    '',
    '| profile | 1 thread: median verify (run / wall) | min..max run | pool threads | pool ops/s | threads / median | ratio |',
    '|---|---|---|---|---|---|---|',
  ]
  for (const r of result.results) {
    const s = r.singleThread
    const p = r.pool
    lines.push(`| ${r.name} | ${s.medianRunMs.toFixed(1)} ms / ${s.medianWallMs.toFixed(1)} ms | ${s.minRunMs.toFixed(1)}..${s.maxRunMs.toFixed(1)} ms | ${p.threads} | ${p.opsPerSecond.toFixed(1)} | ${p.idealOpsPerSecond.toFixed(1)} | ${(p.ratio * 100).toFixed(0)}% |`)
  }
  lines.push('', `Single-thread: median of ${result.results[0]?.singleThread.runs ?? 0} sequential verifies on a 1-thread engine; run = measured inside the worker, wall = the caller's await.`)
  lines.push('Pool: threads x per-thread verifies submitted at once; ratio = achieved ops/s / (threads / single-thread median).')
  return lines.join('\n') + '\n'
}

async function main (): Promise<void> {
  const runs = positiveInt(args.runs, 'runs')
  const perThread = positiveInt(args['per-thread'], 'per-thread')
  const selected = args.profile ?? Object.keys(profiles)
  for (const key of selected) {
    if (profiles[key] === undefined) throw new Error(`unknown --profile ${key}; known: ${Object.keys(profiles).join(', ')}`)
  }
  const result: BenchResult = {
    machine: {
      cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown CPU',
      cores: os.cpus().length,
      cpuBudget: detectCpuBudget(),
      node: process.version,
      platform: `${process.platform}/${process.arch}`,
    },
    results: [],
  }
  for (const key of selected) {
    const profile = profiles[key]
    if (profile === undefined) continue
    if (!args.json) process.stderr.write(`measuring ${profile.name} ...\n`)
    result.results.push(await measure(key, profile, runs, perThread))
  }
  process.stdout.write(args.json ? JSON.stringify(result, null, 2) + '\n' : renderText(result))
}

// The limit the service can reach holds only with the malloc settings the service runs with
// (src/hashing/malloc-env.ts), which glibc reads at a process's start: run again with them.
const missingMalloc = missingHashMallocEnv(process.env)
if (Object.keys(missingMalloc).length > 0) {
  const again = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, ...missingMalloc } })
  process.exitCode = again.status ?? 1
} else {
  main().catch((err: unknown) => {
    process.stderr.write(`hash-verify: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exitCode = 1
  })
}
