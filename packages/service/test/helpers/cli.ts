import type { ChildProcess } from 'node:child_process'
import path from 'node:path'
import { packageRoot } from '../../src/paths.js'
import { spawnUntilReady } from './spawned.js'

export interface StartedCli {
  child: ChildProcess
  /** The URL from the "tollbooth is listening" log line. */
  url: string
  /** The process that wrote that line: `child` or, where node has no process.execve, the child it started again with glibc's malloc settings (src/process/malloc-reexec.ts). */
  pid: number
  /** Every JSON log line so far. */
  lines: () => Array<Record<string, unknown>>
  output: () => string
}

type Write = (text: string) => void

/** A command run in this process (`runKeysCommand`, `runClientsCommand` ...) with what it writes kept: its exit status, stdout and stderr. */
export async function capturedCommand (run: (output: { writeOut: Write, writeError: Write }) => Promise<number>): Promise<{ status: number, stdout: string, stderr: string }> {
  let stdout = ''
  let stderr = ''
  const status = await run({ writeOut: (text) => { stdout += text }, writeError: (text) => { stderr += text } })
  return { status, stdout, stderr }
}

/** The CLI as `npm start` runs it. */
const tollboothEntry = path.join(packageRoot, 'bin', 'tollbooth.js')
/** The lab's harness (src/harness/serve.ts), which `serve`s with a seed article's strategy. */
export const harnessEntry = path.join(packageRoot, 'dist', 'src', 'harness', 'serve.js')

/** Runs `bin/tollbooth.js` as `npm start` does (or another entry) and waits for its "listening" log line. */
export async function startCli (env: NodeJS.ProcessEnv, args: string[] = [], timeoutMs = 60_000, entry = tollboothEntry): Promise<StartedCli> {
  // The whole "listening" line, its newline included: a line cut between two chunks does not parse yet.
  const started = await spawnUntilReady(process.execPath, [entry, ...args], env, /"msg":"tollbooth is listening"[^\n]*\n/, timeoutMs, 'tollbooth')
  const lines = (): Array<Record<string, unknown>> => started.output().split('\n').flatMap((line) => {
    try { return [JSON.parse(line) as Record<string, unknown>] } catch { return [] }
  })
  const listening = lines().find((line) => line.msg === 'tollbooth is listening')
  if (listening === undefined) throw new Error(`no parsable "listening" line in:\n${started.output()}`)
  return { child: started.child, url: String(listening.url), pid: Number(listening.pid), lines, output: started.output }
}

/** SIGTERM, then the exit code. */
export async function stopCli (started: StartedCli): Promise<number | null> {
  if (started.child.exitCode !== null) return started.child.exitCode
  const exited = new Promise<number | null>((resolve) => started.child.once('exit', (code) => { resolve(code) }))
  started.child.kill('SIGTERM')
  return await exited
}
