/**
 * The crowd's second generator (packages/service/bench/go-crowd, in Go) from the lab's benches:
 * built once with the machine's Go, fed the access tokens of accounts signed in here, its one
 * JSON object read back. It sends the lab's me-crowd requests on every core, for at most the
 * lab's CPU a request (in polite crowds about half: 17 µs against 31), and a polite arrival
 * waiting out its Retry-After holds a timer, not a socket: on two cores shared with the service,
 * HAProxy and PostgreSQL, the lab's one generator thread saturated before a polite crowd at three
 * times capacity was all sent.
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { loadScenario, runScenarioSetup, scenarioRef } from '../src/scenarios/index.js'
import { serviceRoot } from './servers.js'

const run = promisify(execFile)

interface Percentiles { count: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number }

/** What go-crowd prints (main.go's `result`). */
export interface GoCrowdResult {
  mode: 'open' | 'closed'
  holdSeconds: number
  offeredPerSecond?: number
  /** 2xx a second over the held part. */
  servedPerSecond: number
  retry?: 'once' | 'naive' | 'polite'
  /** Arrivals (open) or requests (closed) sent. */
  sent: number
  /** Every request, retries included. */
  requests: number
  /** Arrivals not sent: the generator's room for arrivals under way was full. */
  notSent: number
  byStatus: Record<string, number>
  refusedWithRetryAfter: number
  timeouts: number
  connectionErrors: number
  /** Of the answers within the held part, timed from their arrival's intended time. */
  latency: Percentiles
  okLatency: Percentiles
  healthz: Percentiles
  generatorCores: number
}

export type GoCrowdLoad =
  | { mode: 'closed', vus: number, durationMs: number }
  | { mode: 'open', rate: number, rampMs: number, durationMs: number, retry: 'once' | 'naive' | 'polite', attempts: number, maxInFlight: number, connections: number }

/** Builds go-crowd into `dir`; returns the binary's path. */
export async function buildGoCrowd (dir: string): Promise<string> {
  const binary = path.join(dir, 'go-crowd')
  await run('go', ['build', '-o', binary, '.'], { cwd: path.join(serviceRoot, 'bench', 'go-crowd') })
  return binary
}

/**
 * The access tokens of `count` accounts at `target`, one a line in `file`: the lab's own me-crowd
 * setup (accounts registered, or reused from an earlier run, then signed in; a 503 waited out).
 */
export async function writeTokens (target: string, count: number, file: string): Promise<void> {
  const { tokens } = await runScenarioSetup(await loadScenario(scenarioRef('me-crowd')), { url: target, accounts: count, log: () => {}, timeoutMs: 30_000 }) as { tokens: string[] }
  fs.writeFileSync(file, `${tokens.join('\n')}\n`)
}

/** One go-crowd run against `target`; resolves with its result once it has ended. */
export async function runGoCrowd (binary: string, target: string, tokensFile: string, load: GoCrowdLoad): Promise<GoCrowdResult> {
  const seconds = (ms: number): string => `${ms / 1000}s`
  const args = ['-url', target, '-tokens', tokensFile, '-mode', load.mode, '-duration', seconds(load.durationMs)]
  if (load.mode === 'closed') args.push('-vus', String(load.vus))
  else args.push('-rate', String(load.rate), '-ramp', seconds(load.rampMs), '-retry', load.retry, '-attempts', String(load.attempts), '-max-in-flight', String(load.maxInFlight), '-connections', String(load.connections))
  const { stdout } = await run(binary, args, { maxBuffer: 1 << 20 })
  return JSON.parse(stdout) as GoCrowdResult
}
