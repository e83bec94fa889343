/**
 * `spawn`: one child process per hash or verify, as the NestJS article's fix
 * (`child_process.spawn` of a script that does one compare and exits). Nothing
 * bounds how many run at once: the kernel's scheduler is the queue. A child that
 * does not answer in time is killed, and closing the executor kills every child.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { HashFaultLog, HashReply, HashTask } from '../../hashing/index.js'
import { CountingExecutor } from './counting-executor.js'

const defaultScript = fileURLToPath(new URL('./spawn-verify.js', import.meta.url))

/** Far beyond any bounded hash (limits.ts), even with many children sharing the cores: only a stuck child reaches it. */
const defaultTimeoutMs = 60_000

export interface SpawnExecutorOptions {
  log?: HashFaultLog | undefined
  /** How long one child may take before it is killed and its request fails. */
  timeoutMs?: number
  /** The child's script (tests substitute one that misbehaves). */
  script?: string
}

export class SpawnExecutor extends CountingExecutor {
  readonly strategy = 'spawn' as const
  /** Unbounded: one process per request. Reported as 0 ("no fixed pool"). */
  readonly threads = 0
  private readonly children = new Set<ChildProcess>()
  private readonly timeoutMs: number
  private readonly script: string

  constructor (options: SpawnExecutorOptions = {}) {
    super(options.log)
    this.timeoutMs = options.timeoutMs ?? defaultTimeoutMs
    this.script = options.script ?? defaultScript
  }

  protected async execute (task: HashTask): Promise<HashReply> {
    return await new Promise<HashReply>((resolve, reject) => {
      const child = spawn(process.execPath, [this.script], { stdio: ['pipe', 'pipe', 'inherit'] })
      this.children.add(child)
      const out: Buffer[] = []
      let failure: string | undefined
      const timer = setTimeout(() => {
        failure = `did not answer within ${this.timeoutMs} ms and was killed`
        child.kill('SIGKILL')
      }, this.timeoutMs)
      child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
      // A child that exits before reading its task closes the pipe (EPIPE): its exit answers the request.
      child.stdin.on('error', (err) => { failure ??= `closed its input early (${err.message})` })
      child.once('error', (err) => {
        failure ??= err.message
        if (child.pid !== undefined) return
        // Never started: no 'close' to wait for.
        clearTimeout(timer)
        this.children.delete(child)
        reject(err)
      })
      child.once('close', (code, signal) => {
        clearTimeout(timer)
        this.children.delete(child)
        if (code !== 0) {
          reject(new Error(`the hash process ${failure ?? `exited with ${signal ?? `code ${String(code)}`}`}`))
          return
        }
        try {
          resolve(JSON.parse(Buffer.concat(out).toString('utf8')) as HashReply)
        } catch {
          reject(new Error(`the hash process answered no reply${failure === undefined ? '' : `: it ${failure}`}`))
        }
      })
      child.stdin.end(JSON.stringify(task))
    })
  }

  /** Kills every child still running and waits for each to exit; their requests fail. */
  protected async shutdown (): Promise<void> {
    await Promise.all([...this.children].map(async (child) => {
      const closed = new Promise((resolve) => child.once('close', resolve))
      child.kill('SIGKILL')
      await closed
    }))
  }
}
