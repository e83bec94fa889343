import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { packageRoot } from '../../src/paths.js'

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
  const child = spawn(process.execPath, [entry, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const lines = (): Array<Record<string, unknown>> => output.split('\n').flatMap((line) => {
    try { return [JSON.parse(line) as Record<string, unknown>] } catch { return [] }
  })
  // Settles on the output itself: the "listening" line, the exit, or the (generous) bound.
  const listening = await new Promise<{ url: string, pid: number }>((resolve, reject) => {
    const fail = (why: string): void => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(new Error(`tollbooth did not start (${why}):\n${output}`))
    }
    const timer = setTimeout(() => { fail(`no "listening" line in ${timeoutMs} ms`) }, timeoutMs)
    let listening = false
    const onData = (chunk: Buffer): void => {
      output += chunk.toString()
      if (listening) return
      const ready = lines().find((line) => line.msg === 'tollbooth is listening')
      if (ready !== undefined) {
        listening = true
        clearTimeout(timer)
        child.off('exit', onExit)
        resolve({ url: String(ready.url), pid: Number(ready.pid) })
      }
    }
    const onExit = (code: number | null): void => { fail(`exited with ${String(code)}`) }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', onExit)
  })
  return { child, ...listening, lines, output: () => output }
}

/** SIGTERM, then the exit code. */
export async function stopCli (started: StartedCli): Promise<number | null> {
  if (started.child.exitCode !== null) return started.child.exitCode
  const exited = new Promise<number | null>((resolve) => started.child.once('exit', (code) => { resolve(code) }))
  started.child.kill('SIGTERM')
  return await exited
}
