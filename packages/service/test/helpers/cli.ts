import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { packageRoot } from '../../src/paths.js'

export interface StartedCli {
  child: ChildProcess
  /** The URL from the "tollbooth is listening" log line. */
  url: string
  /** Every JSON log line so far. */
  lines: () => Array<Record<string, unknown>>
  output: () => string
}

/** Runs `bin/tollbooth.js` as `npm start` does and waits for its "listening" log line. */
export async function startCli (env: NodeJS.ProcessEnv, args: string[] = [], timeoutMs = 60_000): Promise<StartedCli> {
  const child = spawn(process.execPath, [path.join(packageRoot, 'bin', 'tollbooth.js'), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const lines = (): Array<Record<string, unknown>> => output.split('\n').flatMap((line) => {
    try { return [JSON.parse(line) as Record<string, unknown>] } catch { return [] }
  })
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const ready = lines().find((line) => line.msg === 'tollbooth is listening')
    if (ready !== undefined) return { child, url: String(ready.url), lines, output: () => output }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`tollbooth did not start:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** SIGTERM, then the exit code. */
export async function stopCli (started: StartedCli): Promise<number | null> {
  if (started.child.exitCode !== null) return started.child.exitCode
  const exited = new Promise<number | null>((resolve) => started.child.once('exit', (code) => { resolve(code) }))
  started.child.kill('SIGTERM')
  return await exited
}
