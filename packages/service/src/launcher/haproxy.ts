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

export interface HaproxyServer { name: string, port: number }

export interface HaproxyConfigOptions {
  /** The frontend's port on 127.0.0.1. */
  port: number
  servers: readonly HaproxyServer[]
  /** Unix socket for `show stat` (which servers are up). */
  statsSocket: string
  /** Health-check interval; default 1000 ms (deploy/ checks less often, with its drain sized to match). */
  checkIntervalMs?: number
}

/**
 * The configuration: deploy/haproxy/haproxy.cfg's `defaults` and backend, on 127.0.0.1 with fixed
 * ports instead of Docker's DNS, and `rise 1`, so a restarted replica takes load again at once.
 */
export function haproxyConfig (options: HaproxyConfigOptions): string {
  const interMs = options.checkIntervalMs ?? 1000
  return [
    'global',
    // Well under the usual 20,000-file limit of a shell (deploy/ raises it in the container).
    '    maxconn 4096',
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
    // Connection failures are retried on another replica; never a 503: tollbooth's 503s are its
    // admission control, and a retry elsewhere would multiply load.
    '    retries 2',
    '    option redispatch 1',
    '    retry-on conn-failure empty-response',
    '',
    'frontend api',
    `    bind 127.0.0.1:${options.port}`,
    '    default_backend tollbooth',
    '',
    'backend tollbooth',
    '    balance leastconn',
    '    option httpchk',
    '    http-check send meth GET uri /readyz',
    '    http-check expect status 200',
    `    default-server check inter ${interMs}ms fall 2 rise 1`,
    ...options.servers.map((server) => `    server ${server.name} 127.0.0.1:${server.port}`),
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

export interface RunningHaproxy {
  url: string
  /** Each server's state as HAProxy sees it: UP, DOWN, `UP 1/2` (going down) ... */
  serverStates (): Promise<Map<string, string>>
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
export async function startHaproxy (options: { port: number, servers: readonly HaproxyServer[], checkIntervalMs?: number }): Promise<RunningHaproxy> {
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

  const serverStates = async (): Promise<Map<string, string>> => {
    const csv = await askStats(statsSocket, 'show stat')
    const states = new Map<string, string>()
    for (const line of csv.split('\n')) {
      const [proxy, server, ...rest] = line.split(',')
      // The columns: pxname,svname,... with `status` the 18th.
      if (proxy === 'tollbooth' && server !== undefined && server !== 'BACKEND' && server !== 'FRONTEND') states.set(server, rest[15] ?? '')
    }
    return states
  }
  const haproxy: RunningHaproxy = {
    url: `http://127.0.0.1:${options.port}`,
    serverStates,
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
