/** `tollbooth keys ...` as an operator runs it (the real CLI, its own process), or in this process. */
import { spawn } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { runKeysCommand } from '../../src/cli/keys-command.js'
import { tollboothBin } from '../../src/launcher/index.js'
import { capturedCommand } from '../helpers/cli.js'

export interface KeysRun {
  status: number | null
  stdout: string
  stderr: string
  /** performance.now() when the process exited. */
  exitedAtMs: number
}

/** Runs `tollbooth keys <args>` and resolves once it has exited and its output is read. */
export async function runKeys (args: string[], env: NodeJS.ProcessEnv): Promise<KeysRun> {
  const child = spawn(process.execPath, [tollboothBin, 'keys', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  let exitedAtMs = 0
  child.once('exit', () => { exitedAtMs = performance.now() })
  const status = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => { resolve(code) })
  })
  return { status, stdout, stderr, exitedAtMs }
}

export interface ListedKeyJson {
  kid: string
  alg: string
  createdAt: string
  activatesAt: string
  retiredAt: string | null
  state: string
}

/** `tollbooth keys list --json`, parsed. */
export async function listedKeys (env: NodeJS.ProcessEnv): Promise<ListedKeyJson[]> {
  const run = await runKeys(['list', '--json'], env)
  if (run.status !== 0) throw new Error(`tollbooth keys list exited ${String(run.status)}: ${run.stderr}`)
  return (JSON.parse(run.stdout) as { keys: ListedKeyJson[] }).keys
}

/** The same command run in this process (no process start per call): for the many checks of its output and refusals. */
export async function keysCommand (args: string[], env: NodeJS.ProcessEnv): Promise<Omit<KeysRun, 'exitedAtMs'>> {
  return await capturedCommand(async (output) => await runKeysCommand(args, { env, ...output }))
}
