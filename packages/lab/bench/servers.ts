/**
 * The servers the benches measure, started here and stopped by the caller: tollbooth through the
 * launcher (as the lab starts it), tollbooth under `node --cpu-prof` (the launcher takes no node
 * flags, and NODE_OPTIONS refuses --cpu-prof), and the service's bare reference for GET /me
 * (packages/service/bench/bare-me-server.ts: Fastify and pg, nothing else).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startServe, tollboothBin } from 'tollbooth/launcher'

/** The service package's folder, where its bench builds are (dist/bench/). */
export const serviceRoot = path.dirname(path.dirname(tollboothBin))

/** Seals the signing keys of the benches' services: throwaway services, not a secret. */
const benchKeyEncryptionKey = Buffer.alloc(32, 'tollbooth bench').toString('base64')

export interface RunningServer {
  url: string
  pid: number
  stop (): Promise<void>
}

/** A tollbooth's environment on `databaseUrl`, on a free port of 127.0.0.1, over this process's; `settings` last. */
export function serviceEnv (databaseUrl: string, settings: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    TOLLBOOTH_LOG_LEVEL: 'info',
    // Stopped after its load: no load balancer to drain for.
    TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0',
    TOLLBOOTH_KEY_ENCRYPTION_KEY: benchKeyEncryptionKey,
    ...settings,
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: databaseUrl,
  }
}

export async function startTollbooth (env: NodeJS.ProcessEnv): Promise<RunningServer> {
  const service = await startServe({ env })
  return { url: service.url, pid: service.pid, stop: async () => { await service.stop() } }
}

async function stopChild (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  await exited
}

/** Resolves with the URL the service writes to its ready file (`serve --ready-file`) once it listens; rejects if it exits first. */
async function readyUrl (child: ChildProcess, readyFile: string): Promise<string> {
  const watcher = fs.watch(path.dirname(readyFile))
  try {
    return await new Promise<string>((resolve, reject) => {
      const read = (): void => {
        try {
          const { url } = JSON.parse(fs.readFileSync(readyFile, 'utf8')) as { url?: unknown }
          if (typeof url === 'string') resolve(url)
        } catch {} // not written yet: it is renamed into place whole
      }
      watcher.on('change', read)
      child.once('exit', (code) => { reject(new Error(`tollbooth exited (code ${String(code)}) before it listened`)) })
      read()
    })
  } finally {
    watcher.close()
  }
}

/** tollbooth under `node --cpu-prof`: each of its threads writes a profile into `profileDir` when it exits. */
export async function startProfiledTollbooth (env: NodeJS.ProcessEnv, profileDir: string): Promise<RunningServer> {
  const readyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-bench-ready-'))
  const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, tollboothBin, 'serve', '--ready-file', path.join(readyDir, 'ready.json')], { env, stdio: ['ignore', 'ignore', 'inherit'] })
  try {
    const url = await readyUrl(child, path.join(readyDir, 'ready.json'))
    return { url, pid: child.pid ?? 0, stop: async () => { await stopChild(child) } }
  } catch (err) {
    await stopChild(child)
    throw err
  } finally {
    fs.rmSync(readyDir, { recursive: true, force: true })
  }
}

/** The bare reference: verifies the HS256 token with `jwtSecret` and reads the user from `databaseUrl`, as tollbooth's GET /me does. */
export async function startBareServer (databaseUrl: string, jwtSecret: string): Promise<RunningServer> {
  const script = path.join(serviceRoot, 'dist', 'bench', 'bare-me-server.js')
  const child = spawn(process.execPath, [script], { env: { ...process.env, DATABASE_URL: databaseUrl, JWT_SECRET: jwtSecret, DB_POOL_SIZE: '10' }, stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let buffered = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        buffered += chunk.toString()
        const listening = /^listening (\S+)$/m.exec(buffered)
        if (listening?.[1] !== undefined) resolve(listening[1])
      })
      child.once('exit', (code) => { reject(new Error(`${script} exited (code ${String(code)}) before it listened`)) })
    })
    // Keep draining its output, or a full pipe would block it.
    child.stdout?.removeAllListeners('data').resume()
    return { url, pid: child.pid ?? 0, stop: async () => { await stopChild(child) } }
  } catch (err) {
    await stopChild(child)
    throw err
  }
}
