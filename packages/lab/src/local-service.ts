/**
 * Services the lab starts itself when no --target is given: one embedded
 * PostgreSQL for the whole command (a scratch folder, removed after), and a
 * tollbooth process per run on it, started the way a user would start one
 * (`bin/tollbooth.js serve`), so the lab measures exactly what ships.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { scratchClusterDir, startEmbeddedPostgres } from '../db/embedded.js'
import { packageRoot } from '../paths.js'

export interface LocalDatabase {
  url: string
  stop (): Promise<void>
}

/** An embedded PostgreSQL in a scratch folder, deleted on stop. */
export async function startLocalDatabase (): Promise<LocalDatabase> {
  const clusterDir = scratchClusterDir('lab')
  const database = await startEmbeddedPostgres({ clusterDir, databaseName: 'tollbooth_lab' })
  return {
    url: database.url,
    async stop () {
      await database.stop()
      fs.rmSync(path.dirname(clusterDir), { recursive: true, force: true })
    },
  }
}

export interface LocalServiceOptions {
  databaseUrl: string
  /** Environment for the service (TOLLBOOTH_HASH_STRATEGY, TOLLBOOTH_BCRYPT_COST ...); PORT, HOST and the database are the lab's. */
  env: Record<string, string>
  startTimeoutMs?: number
}

export interface LocalService {
  url: string
  pid: number
  /** The last lines the service logged, for error messages. */
  logTail (): string
  stop (): Promise<void>
}

const tailLines = 40

/** A secret shared by the services of one lab command, so tokens stay valid across them. */
export const labJwtSecret = randomBytes(32).toString('base64url')

export async function startLocalService (options: LocalServiceOptions): Promise<LocalService> {
  const inherited = { ...process.env }
  // libuv reads this once: an inherited value would change what the libuv strategies measure.
  delete inherited.UV_THREADPOOL_SIZE
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    TOLLBOOTH_LOG_LEVEL: 'info',
    ...options.env,
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: options.databaseUrl,
    TOLLBOOTH_JWT_SECRET: labJwtSecret,
  }
  const child: ChildProcess = spawn(process.execPath, [path.join(packageRoot, 'bin', 'tollbooth.js'), 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const tail: string[] = []
  let partial = ''
  let onListening: ((url: string) => void) | undefined
  const onData = (chunk: Buffer): void => {
    partial += chunk.toString()
    const lines = partial.split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) {
      tail.push(line)
      if (tail.length > tailLines) tail.shift()
      if (onListening !== undefined && line.includes('tollbooth is listening')) {
        try {
          const entry = JSON.parse(line) as { url?: string }
          if (entry.url !== undefined) onListening(entry.url)
        } catch {}
      }
    }
  }
  child.stdout?.on('data', onData)
  child.stderr?.on('data', onData)
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { resolve(code) }))

  const startTimeoutMs = options.startTimeoutMs ?? 120_000
  let timer: NodeJS.Timeout | undefined
  const url = await new Promise<string>((resolve, reject) => {
    const fail = (why: string): void => {
      if (onListening === undefined) return // started already: a later exit is the normal stop
      child.kill('SIGKILL')
      reject(new Error(`the service (${options.env.TOLLBOOTH_HASH_STRATEGY ?? 'tollbooth'}) ${why}:\n${tail.join('\n')}`))
    }
    onListening = resolve
    timer = setTimeout(() => { fail(`did not start within ${startTimeoutMs} ms`) }, startTimeoutMs)
    void exited.then((code) => { fail(`exited with code ${String(code)} before listening`) })
  }).finally(() => {
    clearTimeout(timer)
    onListening = undefined
  })
  return {
    url,
    pid: child.pid ?? 0,
    logTail: () => tail.join('\n'),
    async stop () {
      if (child.exitCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      await exited
      clearTimeout(timer)
    },
  }
}
