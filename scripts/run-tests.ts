/**
 * `npm test`: one real PostgreSQL for the whole run (the embedded one, started
 * non-durable as its data is thrown away: about 10 s less system time of a run;
 * or the server at DATABASE_URL), then node's test runner over every package's dist/test
 * (packages/service, packages/lab) in two lanes:
 *
 * - the parallel lane: every file not listed below, several files at once. Each
 *   test file makes its own database on the server and starts its own service on
 *   port 0, so files never share state;
 * - the timing lane: the files listed in `timingLane`, whose checks hold a wall
 *   clock or a share of the CPU (event-loop delay, thread priority, deadlines in
 *   milliseconds, latency ratios). They run one file at a time, after the parallel
 *   lane, so no other test file competes with them for the cores.
 *
 * Within a lane the files start slowest first, by the durations the last run
 * recorded (dist/test-durations/<lane>.json; alphabetical when there is none), so
 * a long file does not start last and leave the other slots idle at the end.
 *
 * `node dist/scripts/run-tests.js overload pacing` runs only the files whose path
 * contains one of the words, each in its lane. TOLLBOOTH_TEST_CONCURRENCY sets how
 * many files the parallel lane runs at once (default: the cores, plus one, as
 * most files spend their time waiting on sockets and PostgreSQL).
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDatabase, type LaunchedDatabase } from 'tollbooth/launcher'

/** The workspace root, from dist/scripts/. */
const workspaceRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const packages = ['service', 'lab']
/** Where the tests of the workspace are compiled to: a file's key is its path from here, e.g. service/hashing/x.test. */
const testsRoot = path.join(workspaceRoot, 'packages')

/**
 * The timing lane, by package and path under its test/ (without the extension): the one list of
 * files that must run alone. A new test with a wall-clock or CPU-share bound goes here.
 */
const timingLane: readonly string[] = [
  'service/harness/comparison-strategies.test', // libuv pool starvation, timer lateness
  'service/hashing/event-loop-responsive.test', // event-loop delay p99 while hashes run
  'service/hashing/pool-admission.test', // deadlines of tens of ms on one real thread
  'service/hashing/thread-priority.test', // nice values and CPU share of the hash threads
  'service/hashing/verify-dummy.test', // a dummy verify's time against a real one's (medians of ms)
  'lab/load/load-generation.test', // open and closed model latency bounds
  'lab/load/healthz-probe.test', // probe latency while the main thread is blocked on purpose
  'service/overload/login-admission.test', // refusals faster than the queued work
  'service/accounts/sign-in/login.test', // unknown email vs wrong password time ratio
  'service/overload/overload.test', // event loop and /healthz latency in a storm
  'service/overload/pacing.test', // held refusals measured in ms
  'service/overload/cheap-sign-in.test', // a cost-16 verify must outlast filling the queue with logins
  'service/http/protocol-errors.test', // a login held in the queue by a cost-12 hash, inside its 2 s deadline, while the service closes
  'service/overload/shedding.test', // a saturated event loop, on purpose
  'service/launcher/replicas.test', // replicas under 0.5-CPU quotas, and HAProxy's 1 s health checks against a 3.5 s drain
]

/** packages/<name>/dist/test/<path>.js -> packages/<name>/test/<path>.ts, the file it was compiled from. */
function sourceOf (file: string): string {
  return file.replace(`${path.sep}dist${path.sep}test${path.sep}`, `${path.sep}test${path.sep}`).replace(/\.js$/, '.ts')
}

function testFiles (dir: string): string[] {
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return testFiles(full)
    return entry.name.endsWith('.test.js') ? [full] : []
  }).sort()
}

/** A file's key: its package and its path under that package's test/, without the extension (service/hashing/x.test). */
function keyOf (file: string): string {
  return path.relative(testsRoot, file).split(path.sep).join('/').replace('/dist/test/', '/').replace(/\.js$/, '')
}

function laneOf (file: string): 'parallel' | 'timing' {
  return timingLane.includes(keyOf(file)) ? 'timing' : 'parallel'
}

/** The files, slowest first by the seconds recorded for them (unrecorded ones first: they may be slow). */
function slowestFirst (files: string[], recorded: Record<string, number>): string[] {
  const seconds = (file: string): number => recorded[keyOf(file)] ?? Infinity
  return [...files].sort((a, b) => seconds(b) - seconds(a) || a.localeCompare(b))
}

function readDurations (file: string): Record<string, number> {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, number>
  } catch {
    return {}
  }
}

function parallelConcurrency (): number {
  const configured = Number(process.env.TOLLBOOTH_TEST_CONCURRENCY)
  if (Number.isInteger(configured) && configured >= 1) return configured
  return os.availableParallelism() + 1
}

/** Where a lane's reporter writes its failures (scripts/test-durations.ts), read back at the end of the run. */
function failuresFile (lane: string): string {
  return path.join(workspaceRoot, 'dist', 'test-durations', `${lane}.failures.txt`)
}

async function runLane (name: string, laneFiles: string[], concurrency: number, adminUrl: string): Promise<number> {
  fs.rmSync(failuresFile(name), { force: true })
  if (laneFiles.length === 0) return 0
  process.stdout.write(`# ${name} lane: ${laneFiles.length} file(s), ${concurrency} at a time\n`)
  const started = performance.now()
  const durations = path.join(workspaceRoot, 'dist', 'scripts', 'test-durations.js')
  const recordDir = path.join(workspaceRoot, 'dist', 'test-durations')
  fs.mkdirSync(recordDir, { recursive: true })
  const record = path.join(recordDir, `${name}.json`)
  const previous = readDurations(record)
  const files = slowestFirst(laneFiles, previous)
  const child = spawn(process.execPath, [
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    `--test-reporter=${durations}`, '--test-reporter-destination=stdout',
    ...files,
  ], {
    stdio: 'inherit',
    env: {
      ...process.env,
      TOLLBOOTH_TEST_ADMIN_DATABASE_URL: adminUrl,
      TOLLBOOTH_LOG_LEVEL: process.env.TOLLBOOTH_LOG_LEVEL ?? 'silent',
      TOLLBOOTH_TEST_DURATIONS_OUT: `${record}.new`,
      TOLLBOOTH_TEST_FAILURES_OUT: failuresFile(name),
    },
  })
  const code = await new Promise<number>((resolve) => {
    child.on('exit', (exitCode, signal) => { resolve(exitCode ?? (signal === null ? 1 : 128)) })
  })
  process.stdout.write(`# ${name} lane: ${((performance.now() - started) / 1000).toFixed(1)} s, ${code === 0 ? 'passed' : `failed (exit ${code})`}\n`)
  // A filtered run records only its files: keep what the earlier runs knew of the others.
  if (fs.existsSync(`${record}.new`)) {
    fs.writeFileSync(record, JSON.stringify({ ...previous, ...readDurations(`${record}.new`) }, null, 2) + '\n')
    fs.rmSync(`${record}.new`)
  }
  return code
}

async function main (): Promise<number> {
  const filters = process.argv.slice(2)
  let files = packages.flatMap((name) => testFiles(path.join(testsRoot, name, 'dist', 'test')))
  // tsc leaves the output of a test file that was since deleted or renamed: never run it.
  const stale = files.filter((file) => !fs.existsSync(sourceOf(file)))
  if (stale.length > 0) process.stdout.write(`# not run, their source is gone (stale build output): ${stale.map(keyOf).join(', ')}\n`)
  files = files.filter((file) => !stale.includes(file))
  if (filters.length > 0) files = files.filter((file) => filters.some((filter) => file.includes(filter)))
  if (files.length === 0) {
    process.stderr.write('no test files matched\n')
    return 1
  }
  const missing = timingLane.filter((entry) => { const [name, ...rest] = entry.split('/'); return !fs.existsSync(path.join(testsRoot, name ?? '', 'dist', 'test', `${rest.join('/')}.js`)) })
  if (missing.length > 0) {
    process.stderr.write(`run-tests: the timing lane names files that do not exist: ${missing.join(', ')}\n`)
    return 1
  }

  let embedded: LaunchedDatabase | undefined
  let adminUrl = process.env.DATABASE_URL
  if (adminUrl === undefined || adminUrl === '') {
    process.stdout.write('# starting an embedded PostgreSQL for the tests\n')
    embedded = await startDatabase({ name: 'tollbooth_test_admin', label: 'test', nonDurable: true })
    adminUrl = embedded.url
  } else {
    process.stdout.write('# using the PostgreSQL server at DATABASE_URL for the tests\n')
  }

  try {
    const started = performance.now()
    // Both lanes always run, so one failure does not hide the other lane's results.
    const parallel = await runLane('parallel', files.filter((file) => laneOf(file) === 'parallel'), parallelConcurrency(), adminUrl)
    const timing = await runLane('timing', files.filter((file) => laneOf(file) === 'timing'), 1, adminUrl)
    process.stdout.write(`# tests: ${((performance.now() - started) / 1000).toFixed(1)} s\n`)
    // Last, so a log cut to its tail still says why: each failed test and the head of its error.
    for (const lane of ['parallel', 'timing']) {
      if (fs.existsSync(failuresFile(lane))) process.stdout.write(`# failures in the ${lane} lane:\n${fs.readFileSync(failuresFile(lane), 'utf8')}`)
    }
    return parallel !== 0 ? parallel : timing
  } finally {
    await embedded?.stop()
  }
}

main().then((code) => { process.exitCode = code }, (err: unknown) => {
  process.stderr.write(`run-tests: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
