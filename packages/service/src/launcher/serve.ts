/** `startServe()`: `tollbooth serve` (or the lab's harness) as its own process; its URL from `--ready-file`, never from log text. */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { ReadyInfo } from '../cli/index.js'
import { hashMallocEnvTurnedOff, withHashMallocEnv, withServiceV8Flags } from '../machine/index.js'
import { packageRoot } from '../paths.js'

/** The service's command line: `node <tollboothBin> serve`. */
export const tollboothBin: string = path.join(packageRoot, 'bin', 'tollbooth.js')

/** The lab's harness: `serve` with a seed article's strategy or the diagnostic routes (not in a production install). */
const harnessEntry: string = path.join(packageRoot, 'dist', 'src', 'harness', 'serve.js')

export interface StartServeOptions {
  /** The service's whole environment (settings as TOLLBOOTH_*, PORT, HOST, DATABASE_URL ...); default: this process's. glibc's malloc settings for hashing are added where it lacks them, unless it (or `args`) sets TOLLBOOTH_MALLOC_SETTINGS=off (machine/malloc-env.ts). */
  env?: NodeJS.ProcessEnv
  /** Extra `serve` flags. */
  args?: string[]
  /** Give up (and kill the process) when it is not listening by then; default 120 s. */
  startTimeoutMs?: number
  /** Lines of its output kept for `logTail()`; default 40. */
  tailLines?: number
  /** A cgroup's `cgroup.procs`, joined before node starts (a shell writes its pid, then execs), so the service sees the quota. */
  cgroupProcsFile?: string
  /** The lab's research harness instead of the service as it ships (docs/reference/launcher.md). */
  harness?: HarnessOptions
}

/** What the lab may ask beyond what ships: a seed article's hash strategy, and the `auth-path` scenario's diagnostic logins. */
export interface HarnessOptions {
  strategy?: string
  labDiagnostics?: boolean
}

/** The command that starts the service, or the harness when one is asked for, and what the harness adds to its environment. */
function serveCommand (options: StartServeOptions, readyFile: string): { command: string[], env: NodeJS.ProcessEnv } {
  const serveArgs = ['serve', ...(options.args ?? []), '--ready-file', readyFile]
  const { harness } = options
  // The service's V8 flags this node takes, as the `tollbooth` command's re-execution gives them (machine/v8-flags.ts).
  const node = [process.execPath, ...withServiceV8Flags([])]
  if (harness === undefined) return { command: [...node, tollboothBin, ...serveArgs], env: {} }
  const harnessArgs = [...(harness.strategy === undefined ? [] : ['--hash-strategy', harness.strategy]), ...(harness.labDiagnostics === true ? ['--lab-diagnostics'] : [])]
  // libuv sizes its pool once, before any of the harness's code runs: the seed articles set it so.
  const env = harness.strategy === 'libuv-128' ? { UV_THREADPOOL_SIZE: '128' } : {}
  return { command: [...node, harnessEntry, ...serveArgs, ...harnessArgs], env }
}

export interface ServeProcess {
  url: string
  /** Where its /metrics is: the admin listener when TOLLBOOTH_ADMIN_PORT is set, else `url` (the ready file says). */
  metricsUrl: string
  /** The process started (the root of the service's process tree). */
  pid: number
  ready: ReadyInfo
  /** The last lines the service wrote to stdout and stderr, for error messages. */
  logTail (): string
  /** SIGTERM (a graceful shutdown), SIGKILL after `graceMs` (default 20 s); resolves once it exited. */
  stop (graceMs?: number): Promise<void>
}

function readReady (file: string): ReadyInfo | undefined {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
  const info = JSON.parse(text) as Partial<ReadyInfo>
  return typeof info.url === 'string' ? info as ReadyInfo : undefined
}

/** Starts `tollbooth serve` and resolves once it listens; rejects, with the end of its output, if it exits or times out first. */
export async function startServe (options: StartServeOptions = {}): Promise<ServeProcess> {
  if (options.harness !== undefined && !fs.existsSync(harnessEntry)) throw new Error(`the lab's harness is not installed here (${harnessEntry}): it comes with the repository's workspace, not with the service's package`)
  const readyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-ready-'))
  const readyFile = path.join(readyDir, 'ready.json')
  const serve = serveCommand(options, readyFile)
  // glibc's malloc settings for the hash threads' memory, where the caller did not set its own or turn them off (machine/malloc-env.ts).
  const given = options.env ?? process.env
  const env: NodeJS.ProcessEnv = { ...(hashMallocEnvTurnedOff(given, options.args) ? given : withHashMallocEnv(given)), ...serve.env }
  const { command } = serve
  const child = options.cgroupProcsFile === undefined
    ? spawn(command[0] ?? '', command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn('/bin/sh', ['-c', 'echo $$ > "$1" && shift && exec "$@"', 'sh', options.cgroupProcsFile, ...command], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const tailLines = options.tailLines ?? 40
  const tail: string[] = []
  let partial = ''
  const onData = (chunk: Buffer): void => {
    const lines = (partial + chunk.toString()).split('\n')
    partial = lines.pop() ?? ''
    tail.push(...lines)
    if (tail.length > tailLines) tail.splice(0, tail.length - tailLines)
  }
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  const logTail = (): string => [...tail, ...(partial === '' ? [] : [partial])].join('\n')

  const startTimeoutMs = options.startTimeoutMs ?? 120_000
  let watcher: fs.FSWatcher | undefined
  let timer: NodeJS.Timeout | undefined
  try {
    const ready = await new Promise<ReadyInfo>((resolve, reject) => {
      let settled = false
      const fail = (why: string): void => {
        if (settled) return
        settled = true
        child.kill('SIGKILL')
        reject(new Error(`tollbooth serve ${why}:\n${logTail()}`))
      }
      const check = (): void => {
        try {
          const info = readReady(readyFile)
          if (info !== undefined && !settled) {
            settled = true
            resolve(info)
          }
        } catch (err) {
          fail(`wrote an unreadable ready file (${(err as Error).message})`)
        }
      }
      // The service renames a complete file into place: one watch event, never a half-written file.
      watcher = fs.watch(readyDir, check)
      watcher.on('error', (err) => { fail(`could not be watched (${err.message})`) })
      check()
      timer = setTimeout(() => { fail(`did not listen within ${startTimeoutMs} ms`) }, startTimeoutMs)
      child.once('error', (err) => { fail(`could not start (${err.message})`) })
      child.once('exit', (code, signal) => { fail(`exited (code ${String(code)}, signal ${String(signal)}) before listening`) })
    })
    return {
      url: ready.url,
      metricsUrl: ready.adminUrl ?? ready.url,
      pid: child.pid ?? 0,
      ready,
      logTail,
      async stop (graceMs = 20_000) {
        if (child.exitCode !== null || child.signalCode !== null) return
        child.kill('SIGTERM')
        const force = setTimeout(() => child.kill('SIGKILL'), graceMs)
        await exited
        clearTimeout(force)
      },
    }
  } catch (err) {
    if (child.pid !== undefined) await exited
    throw err
  } finally {
    clearTimeout(timer)
    watcher?.close()
    fs.rmSync(readyDir, { recursive: true, force: true })
  }
}
