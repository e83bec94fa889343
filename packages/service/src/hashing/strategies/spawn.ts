/**
 * `spawn`: one child process per hash or verify, as the NestJS article's fix
 * (`child_process.spawn` of a script that does one compare and exits). Nothing
 * bounds how many run at once: the kernel's scheduler is the queue.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { HashReply, HashTask } from '../executor.js'
import { CountingExecutor } from './counting-executor.js'

const script = fileURLToPath(new URL('./spawn-verify.js', import.meta.url))

export class SpawnExecutor extends CountingExecutor {
  readonly strategy = 'spawn' as const
  /** Unbounded: one process per request. Reported as 0 ("no fixed pool"). */
  readonly threads = 0

  protected async execute (task: HashTask): Promise<HashReply> {
    return await new Promise<HashReply>((resolve, reject) => {
      const child = spawn(process.execPath, [script], { stdio: ['pipe', 'pipe', 'inherit'] })
      const out: Buffer[] = []
      child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
      child.once('error', reject)
      child.once('close', (code) => {
        if (code !== 0) {
          reject(new Error(`the verify process exited with code ${String(code)}`))
          return
        }
        try {
          resolve(JSON.parse(Buffer.concat(out).toString('utf8')) as HashReply)
        } catch (err) {
          reject(err)
        }
      })
      child.stdin.end(JSON.stringify(task))
    })
  }

  protected async shutdown (): Promise<void> {}
}
