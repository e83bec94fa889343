/**
 * `npm run bench:import`: `tollbooth users import` of a generated file (1,000,000 lines by
 * default) into a fresh database on a durable embedded PostgreSQL, as a child process: lines/s
 * and the importer's peak RSS (VmHWM, read from /proc while it runs), each run on a fresh
 * database, then once more over the same file (every line already present). Not a test.
 *
 *   npm run bench:import
 *   npm run bench:import -- --lines 200000 --runs 3 --json
 *
 * The lines mix the formats of a real migration: bcrypt, argon2id, Django's PBKDF2, Firebase
 * scrypt (with the project's parameters), passlib's scrypt, and a few accounts without a password.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { startDatabase, tollboothBin } from '../src/launcher/index.js'
import { createDatabasePool, migrate } from '../src/db/index.js'

const { values: args } = parseArgs({
  options: {
    lines: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '3' },
    json: { type: 'boolean', default: false },
  },
})
const lineCount = Number(args.lines)
const runs = Number(args.runs)
if (!Number.isSafeInteger(lineCount) || lineCount < 1 || !Number.isSafeInteger(runs) || runs < 1) throw new Error('--lines and --runs take whole numbers >= 1')

/** One real hash of each format (their cost does not matter: the import never verifies them). */
const hashes: Array<{ share: number, line: (email: string) => Record<string, unknown> }> = [
  { share: 40, line: (email) => ({ email, passwordHash: '$2b$10$64GuFPvTi4jpWuTc/Yc4wO2HKGXDm61DAqjAQG0R.Lnrl./lalyr2', name: 'A Name' }) },
  { share: 20, line: (email) => ({ email, passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$a1gRSsimsgurgKGpLby6lw$GedjUq20/+Q9hLiglfQOLBumut6DbVrHvduKJY6/PwA', emailVerified: true }) },
  { share: 20, line: (email) => ({ email, passwordHash: 'pbkdf2_sha256$1000000$Sv6KXRyUQWzoM8wLojc8Kr$pJcs4/lVJqsaIUQyUeJ+Vlo4sWpKvgxN3WC9OlcZk+E=' }) },
  { share: 10, line: (email) => ({ email, passwordHash: 'lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==', passwordSalt: '42xEC+ixf3L2lw==', emailVerified: true }) },
  { share: 9, line: (email) => ({ email, passwordHash: '$scrypt$ln=16,r=8,p=1$GqMUwtjbW+vdm3MupTSm1A$yro+s4sXSWeX6ND4rjQEgOwMRUL+RPh7fFRPxFdGn5k' }) },
  { share: 1, line: (email) => ({ email, name: 'No Password' }) },
]
const firebaseConfig = 'hash_config {\n  algorithm: SCRYPT,\n  base64_signer_key: jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==,\n  base64_salt_separator: Bw==,\n  rounds: 8,\n  mem_cost: 14,\n}\n'

async function writeFile (file: string): Promise<number> {
  const pattern = hashes.flatMap((kind) => Array<typeof kind.line>(kind.share).fill(kind.line))
  const out = fs.createWriteStream(file)
  for (let i = 0; i < lineCount; i++) {
    const line = (pattern[i % pattern.length] ?? pattern[0])?.(`user${i}@bench${i % 97}.example.com`)
    if (!out.write(`${JSON.stringify(line)}\n`)) await once(out, 'drain')
  }
  out.end()
  await once(out, 'finish')
  return fs.statSync(file).size
}

interface RunResult { label: string, seconds: number, linesPerSecond: number, peakRssMiB: number, summary: Record<string, unknown> }

/** VmHWM of a live process in MiB (its peak resident set so far), or undefined once it is gone. */
function peakRssMiB (pid: number): number | undefined {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match?.[1] === undefined ? undefined : Number(match[1]) / 1024
  } catch {
    return undefined
  }
}

async function importOnce (label: string, file: string, paramsFile: string, databaseUrl: string): Promise<RunResult> {
  const started = performance.now()
  const child = spawn(process.execPath, [tollboothBin, 'users', 'import', file, '--firebase-params', paramsFile, '--json', '--report', path.join(path.dirname(file), `${label}.report.jsonl`)], {
    env: { ...process.env, DATABASE_URL: databaseUrl, TOLLBOOTH_PUBLIC_URL: 'https://app.example.com' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  let peak = 0
  const sampler = setInterval(() => { peak = Math.max(peak, peakRssMiB(child.pid ?? 0) ?? 0) }, 20)
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  clearInterval(sampler)
  const seconds = (performance.now() - started) / 1000
  if (code !== 0) throw new Error(`${label}: the import exited ${String(code)}: ${out}`)
  return { label, seconds, linesPerSecond: lineCount / seconds, peakRssMiB: peak, summary: JSON.parse(out) as Record<string, unknown> }
}

async function freshDatabase (adminUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const pool = createDatabasePool(url.toString(), 1)
  try {
    await migrate(pool)
  } finally {
    await pool.end()
  }
  return url.toString()
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-bench-import-'))
const file = path.join(dir, 'users.jsonl')
const paramsFile = path.join(dir, 'firebase-hash-config.txt')
fs.writeFileSync(paramsFile, firebaseConfig)
const bytes = await writeFile(file)
const database = await startDatabase({ label: 'bench-import' })
const results: RunResult[] = []
try {
  for (let run = 1; run <= runs; run++) {
    const url = await freshDatabase(database.url, `bench_import_${run}`)
    results.push(await importOnce(`run ${run}`, file, paramsFile, url))
    if (run === runs) results.push(await importOnce(`run ${run} again (every line present)`, file, paramsFile, url))
  }
} finally {
  await database.stop()
  fs.rmSync(dir, { recursive: true, force: true })
}

const machine = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, ${Math.round(os.totalmem() / 2 ** 30)} GiB`
if (args.json) {
  process.stdout.write(`${JSON.stringify({ machine, lines: lineCount, fileBytes: bytes, results }, null, 2)}\n`)
} else {
  process.stdout.write(`users import: ${lineCount} lines (${(bytes / 2 ** 20).toFixed(0)} MiB), durable embedded PostgreSQL on the same machine; ${machine}\n`)
  for (const result of results) {
    process.stdout.write(`  ${result.label.padEnd(36)} ${result.seconds.toFixed(1).padStart(6)} s  ${Math.round(result.linesPerSecond).toString().padStart(7)} lines/s  peak RSS ${result.peakRssMiB.toFixed(0).padStart(4)} MiB  imported ${String(result.summary.imported)}, present ${String(result.summary.alreadyPresent)}, rejected ${String(result.summary.rejected)}\n`)
  }
}
