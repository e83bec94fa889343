/**
 * HAProxy (Debian's `haproxy` package) in front of local replicas: a configuration generated
 * into a temporary folder from the choices of deploy/haproxy/haproxy.cfg (a test keeps the two
 * in step), run as a child in the foreground, asked about its servers on its stats socket.
 */
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { createError } from '../errors.js'

export interface HaproxyServer { name: string, port: number }

export interface HaproxyConfigOptions {
  /** The frontend's port on 127.0.0.1. */
  port: number
  servers: readonly HaproxyServer[]
  /** Unix socket for `show stat` (which servers are up). */
  statsSocket: string
  /** Health-check interval; default 1000 ms (deploy/ checks less often, with its drain sized to match). */
  checkIntervalMs?: number
  /** Default: `recommendedHaproxyLimits`. */
  limits?: HaproxyLimits | undefined
}

/**
 * What HAProxy lets through to each replica for the capped requests (every API request but the
 * routes with an admission of their own): deploy/haproxy/haproxy.cfg sets the same (a test checks).
 */
export interface HaproxyLimits {
  /** Capped requests at once per replica (`maxconn` of each server); the next ones wait in HAProxy's queue. */
  maxConnPerReplica: number
  /** Past this many waiting per usable replica (`avg_queue`), a capped request is refused at the door, 503 with Retry-After. */
  queuePerReplica: number
  /** A capped request still waiting after this is refused alike (`timeout queue`). */
  queueTimeoutMs: number
  /**
   * Capped requests a second let through per usable replica, counted over the last second; past
   * it they are refused at the door alike. Unset: no rate limit. Set below what a replica serves
   * (`lab sizing`'s capacity for `GET /me`), it keeps the replica's CPU from its quota, so
   * throttling never holds its probes back.
   */
  ratePerReplica?: number | undefined
}

/** The limits docs/how-to/deploy.md recommends ("Behind HAProxy") and the lab measures. */
export const recommendedHaproxyLimits: Readonly<HaproxyLimits> = { maxConnPerReplica: 32, queuePerReplica: 32, queueTimeoutMs: 1000 }

/** The POST routes with an admission of their own (the hash queue refuses at the door): never capped by HAProxy. */
export const ownAdmissionPaths: readonly string[] = ['/api/v1/auth/login', '/api/v1/auth/register', '/api/v1/auth/password/reset', '/api/v1/me/password', '/api/v1/me/factors/recovery-codes']

/** tollbooth's own overload answer (its in-flight cap's), as HAProxy writes it: same status, headers and body. */
export function haproxyOverloadAnswer (retryAfterSeconds = 1): string {
  const error = createError('SERVICE_OVERLOADED')
  const body = JSON.stringify({ error: { code: error.code, message: error.message } })
  return `status 503 content-type "application/json; charset=utf-8" string '${body}' hdr Retry-After ${retryAfterSeconds} hdr Cache-Control no-store`
}

/**
 * The rate limit's rules: the capped requests let through in the last second (the backend's
 * table, one entry) per replica up, read before this request counts; past `ratePerReplica`
 * refused, else counted. A refused request is never counted, so a crowd's refusals do not hold
 * back the requests admitted after it.
 */
function rateLimitRules (ratePerReplica: number | undefined, overloadAnswer: string): string[] {
  if (ratePerReplica === undefined) return []
  return [
    '    http-request set-var(txn.replicas_up) nbsrv(tollbooth) if capped',
    '    http-request set-var(txn.rate_per_replica) int(1),table_http_req_rate(tollbooth),div(txn.replicas_up) if capped',
    `    http-request return ${overloadAnswer} if capped { var(txn.rate_per_replica) -m int gt ${Math.max(1, Math.round(ratePerReplica))} }`,
    '    http-request track-sc0 int(1) table tollbooth if capped',
  ]
}

/**
 * The configuration: deploy/haproxy/haproxy.cfg's `defaults`, frontend and backends, on 127.0.0.1
 * with fixed ports instead of Docker's DNS, and `rise 1`, so a restarted replica takes load again
 * at once. The uncapped backend's servers track the capped one's, so that both take a replica
 * out and back at the same moment.
 */
export function haproxyConfig (options: HaproxyConfigOptions): string {
  const interMs = options.checkIntervalMs ?? 1000
  const limits = options.limits ?? recommendedHaproxyLimits
  const overloadAnswer = haproxyOverloadAnswer()
  return [
    'global',
    // Well under the usual 20,000-file limit of a shell (deploy/ raises it in the container).
    '    maxconn 4096',
    // One thread: here HAProxy shares the machine's cores with the replicas and the lab, and on a
    // busy machine its threads spent more time waiting on each other than serving (bench/README.md).
    '    nbthread 1',
    // Idle connections to the replicas are kept whatever share of the file descriptors the
    // clients hold: past the default 25 %, HAProxy closes each after its answer, and a crowd of
    // thousands of clients made every replica accept and tear down a connection per request.
    '    tune.pool-high-fd-ratio 95',
    '    tune.pool-low-fd-ratio 90',
    `    stats socket ${options.statsSocket} mode 600 level user`,
    '',
    'defaults',
    '    mode http',
    '    option forwardfor',
    '    timeout connect 2s',
    '    timeout client 65s',
    '    timeout server 65s',
    '    timeout http-request 10s',
    '    timeout http-keep-alive 5s',
    '    timeout check 2s',
    `    timeout queue ${limits.queueTimeoutMs}ms`,
    // Connection failures are retried on another replica; never a 503: tollbooth's 503s are its
    // admission control, and a retry elsewhere would multiply load.
    '    retries 2',
    '    option redispatch 1',
    '    retry-on conn-failure empty-response',
    '',
    'frontend api',
    `    bind 127.0.0.1:${options.port}`,
    // Cheap API requests are capped; the routes with an admission of their own and the operational ones are not.
    '    acl api path_beg /api/',
    '    acl post method POST',
    `    acl own_admission path ${ownAdmissionPaths.join(' ')}`,
    '    http-request set-var(txn.capped) bool(true) if api !post || api !own_admission',
    '    acl capped var(txn.capped) -m bool',
    `    http-request return ${overloadAnswer} if capped { avg_queue(tollbooth) gt ${limits.queuePerReplica} }`,
    ...rateLimitRules(limits.ratePerReplica, overloadAnswer),
    '    use_backend tollbooth if capped',
    '    default_backend tollbooth_own_admission',
    '',
    'backend tollbooth',
    ...(limits.ratePerReplica === undefined ? [] : ['    stick-table type integer size 1 expire 10s store http_req_rate(1s)']),
    '    balance leastconn',
    // Any idle connection to a replica takes any client's request, its first included: a crowd of
    // new clients does not make each replica accept a connection per request.
    '    http-reuse always',
    '    option httpchk',
    '    http-check send meth GET uri /readyz',
    '    http-check expect status 200',
    `    http-error ${overloadAnswer}`,
    `    default-server check inter ${interMs}ms fall 2 rise 1 maxconn ${limits.maxConnPerReplica}`,
    ...options.servers.map((server) => `    server ${server.name} 127.0.0.1:${server.port}`),
    '',
    'backend tollbooth_own_admission',
    '    balance leastconn',
    '    http-reuse always',
    ...options.servers.map((server) => `    server ${server.name} 127.0.0.1:${server.port} track tollbooth/${server.name}`),
    '',
  ].join('\n')
}

/** The haproxy executable: $TOLLBOOTH_HAPROXY, else `haproxy` on the PATH or in /usr/sbin; undefined when none. */
export function haproxyBinary (): string | undefined {
  const given = process.env.TOLLBOOTH_HAPROXY
  if (given !== undefined && given !== '') return fs.existsSync(given) ? given : undefined
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin']
  return dirs.filter((dir) => dir !== '').map((dir) => path.join(dir, 'haproxy')).find((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

/** `haproxy -c`: undefined when the configuration is valid, else HAProxy's complaint. */
export function checkHaproxyConfig (binary: string, configFile: string): string | undefined {
  const check = spawnSync(binary, ['-c', '-q', '-f', configFile], { encoding: 'utf8' })
  return check.status === 0 ? undefined : `${check.stdout}${check.stderr}`.trim()
}

export interface HaproxyServerStats {
  status: string
  /** Capped requests waiting in HAProxy's queue for this server alone (`qcur`); most wait in the backend's (`RunningHaproxy.queued`). */
  queued: number
  /** Capped requests at the server now (`scur`), at most its `maxconn`. */
  current: number
  /** Health checks that failed so far (`chkfail`). */
  failedChecks: number
}

export interface RunningHaproxy {
  url: string
  /** The haproxy process (its CPU is the load balancer's). */
  pid: number
  /** Each server's state as HAProxy sees it: UP, DOWN, `UP 1/2` (going down) ... */
  serverStates (): Promise<Map<string, string>>
  /** Each server of the capped backend: its state, requests waiting for it and at it, its failed health checks so far. */
  serverStats (): Promise<Map<string, HaproxyServerStats>>
  /** Capped requests waiting in HAProxy's queue for any server (the backend's `qcur`): what `avg_queue` divides by the servers up. */
  queued (): Promise<number>
  /** Resolves once every named server is UP (or `up: false`: not UP), or rejects after `timeoutMs`. */
  waitFor (names: readonly string[], up: boolean, timeoutMs?: number): Promise<void>
  stop (): Promise<void>
}

async function askStats (socket: string, command: string): Promise<string> {
  return await new Promise<string>((resolve, reject) => {
    const connection = net.connect(socket)
    let text = ''
    connection.setEncoding('utf8')
    connection.on('connect', () => { connection.end(`${command}\n`) })
    connection.on('data', (chunk: string) => { text += chunk })
    connection.on('end', () => { resolve(text) })
    connection.on('error', reject)
  })
}

/** Starts HAProxy with the generated configuration; rejects with its output when it exits or never listens. */
export async function startHaproxy (options: { port: number, servers: readonly HaproxyServer[], checkIntervalMs?: number, limits?: HaproxyLimits | undefined }): Promise<RunningHaproxy> {
  const binary = haproxyBinary()
  if (binary === undefined) throw new Error('haproxy is not installed: install Debian\'s `haproxy` package (apt-get install haproxy), or set TOLLBOOTH_HAPROXY to its path')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-haproxy-'))
  const statsSocket = path.join(dir, 'stats.sock')
  const configFile = path.join(dir, 'haproxy.cfg')
  fs.writeFileSync(configFile, haproxyConfig({ ...options, statsSocket }))
  const invalid = checkHaproxyConfig(binary, configFile)
  if (invalid !== undefined) {
    fs.rmSync(dir, { recursive: true, force: true })
    throw new Error(`the generated HAProxy configuration is not valid:\n${invalid}`)
  }
  // -db: foreground, no daemon, so it is our child and stops with us.
  const child = spawn(binary, ['-db', '-f', configFile], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const keep = (chunk: Buffer): void => { output = (output + chunk.toString()).slice(-4000) }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  let running = true
  void exited.then(() => { running = false })

  /** The `tollbooth` backend's rows in `show stat` (pxname,svname,qcur,qmax,scur,... status is the 18th column, chkfail the 22nd). */
  const statRows = async (): Promise<Map<string, HaproxyServerStats>> => {
    const csv = await askStats(statsSocket, 'show stat')
    const rows = new Map<string, HaproxyServerStats>()
    for (const line of csv.split('\n')) {
      const [proxy, server, ...rest] = line.split(',')
      if (proxy === 'tollbooth' && server !== undefined && server !== 'FRONTEND') {
        rows.set(server, { status: rest[15] ?? '', queued: Number(rest[0] ?? 0), current: Number(rest[2] ?? 0), failedChecks: Number(rest[19] ?? 0) })
      }
    }
    return rows
  }
  const serverStats = async (): Promise<Map<string, HaproxyServerStats>> => {
    const rows = await statRows()
    rows.delete('BACKEND')
    return rows
  }
  const serverStates = async (): Promise<Map<string, string>> => new Map([...await serverStats()].map(([server, row]) => [server, row.status]))
  const haproxy: RunningHaproxy = {
    url: `http://127.0.0.1:${options.port}`,
    pid: child.pid ?? 0,
    serverStates,
    serverStats,
    async queued () {
      return (await statRows()).get('BACKEND')?.queued ?? 0
    },
    async waitFor (names, up, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        if (!running) throw new Error(`haproxy exited:\n${output}`)
        const states = await serverStates().catch(() => new Map<string, string>())
        if (names.every((name) => (states.get(name) === 'UP') === up && states.has(name))) return
        if (Date.now() > deadline) throw new Error(`haproxy: servers ${names.join(', ')} not ${up ? 'UP' : 'out'} within ${timeoutMs} ms: ${JSON.stringify([...states])}`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    },
    async stop () {
      if (running) {
        child.kill('SIGTERM')
        const force = setTimeout(() => child.kill('SIGKILL'), 5000)
        await exited
        clearTimeout(force)
      }
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
  try {
    // The stats socket answers once HAProxy has bound everything.
    const deadline = Date.now() + 10_000
    for (;;) {
      if (!running) throw new Error(`haproxy exited before it listened:\n${output}`)
      if (fs.existsSync(statsSocket) && await serverStates().then(() => true, () => false)) break
      if (Date.now() > deadline) throw new Error(`haproxy did not start within 10 s:\n${output}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  } catch (err) {
    await haproxy.stop()
    throw err
  }
  return haproxy
}
