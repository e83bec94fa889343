/**
 * A program a test runs (the service's CLI, an example's server, oauth2-proxy): started, awaited
 * on a line of its output that says it is ready, and stopped. Its output is kept for the failure
 * message of a test that needs it.
 */
import { spawn, type ChildProcess } from 'node:child_process'

export interface Spawned {
  child: ChildProcess
  output: () => string
  /** SIGTERM, then waits for the exit. */
  stop: () => Promise<void>
}

/** `name`: what the failure message calls it (default the command). */
export async function spawnUntilReady (command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp, timeoutMs = 60_000, name = command): Promise<Spawned> {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const exited = new Promise<void>((resolve) => { child.once('exit', () => { resolve() }) })
  // Settles on the output itself: the ready line, the exit, or the (generous) bound.
  await new Promise<void>((resolve, reject) => {
    const fail = (why: string): void => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(new Error(`${name} did not start (${why}):\n${output}`))
    }
    const timer = setTimeout(() => { fail(`no line matching ${String(ready)} in ${timeoutMs} ms`) }, timeoutMs)
    const onData = (chunk: Buffer): void => {
      output += chunk.toString()
      if (!ready.test(output)) return
      clearTimeout(timer)
      resolve()
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('error', (err) => { fail(err.message) })
    child.once('exit', (code, signal) => { fail(`exited with ${signal ?? String(code)}`) })
  })
  return {
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}
