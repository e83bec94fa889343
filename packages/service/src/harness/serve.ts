/**
 * The lab's harness: `tollbooth serve` with a seed article's hash strategy in place of
 * tollbooth's pool, and the diagnostic login routes of the `auth-path` scenario. The load lab
 * starts it through the launcher (`startServe({ harness })`); `tollbooth serve` never loads this
 * folder, and its settings do not list these choices.
 *
 *   node dist/src/harness/serve.js --hash-strategy libuv [--lab-diagnostics] [serve flags]
 *
 * Strategies: `tollbooth` (the pool as it ships), `event-loop`, `libuv`, `libuv-128` (with
 * UV_THREADPOOL_SIZE=128 in the environment, which the launcher sets: libuv reads it once, before
 * this file runs), `spawn`, `piscina`, `cluster` (one process per CPU, each a default Piscina pool).
 */
import { parseArgs } from 'node:util'
import { createError, isTollboothError } from '../errors.js'
import { isLoopbackHost, type Config } from '../config/index.js'
import { runServe } from '../cli/index.js'
import type { ServiceHarness } from '../process/index.js'
import { labRoutes } from './lab-routes.js'
import { executorFor, seedStrategies, type SeedStrategy } from './strategies/index.js'

/** Its diagnostic logins hand out tokens without a password: never reachable from another machine. */
function loopbackOnly ({ host }: Config): void {
  if (!isLoopbackHost(host)) throw createError('CONFIG_INVALID', `--lab-diagnostics needs the service on a loopback address (HOST 127.0.0.1, ::1 or localhost), not ${host}`, { field: 'lab-diagnostics' })
}

function harnessOf (strategy: SeedStrategy, labDiagnostics: boolean): ServiceHarness {
  const seed = strategy !== 'tollbooth'
  return {
    strategy,
    // The seed articles' services shed nothing; tollbooth's pool under the harness sheds as it ships.
    shedding: !seed,
    ...(seed ? { createExecutor: executorFor(strategy === 'cluster' ? 'piscina' : strategy) } : {}),
    ...(strategy === 'cluster' ? { processPerCpu: true } : {}),
    ...(labDiagnostics ? { apiRoutes: labRoutes, checkConfig: loopbackOnly } : {}),
  }
}

/** The harness's own flags out of the arguments; the rest are `serve`'s. */
function parseHarnessArgs (argv: string[]): { strategy: SeedStrategy, labDiagnostics: boolean, serveArgs: string[] } {
  const { values, tokens } = parseArgs({ args: argv, strict: false, tokens: true, allowPositionals: true, options: { 'hash-strategy': { type: 'string' }, 'lab-diagnostics': { type: 'boolean' } } })
  const taken = new Set<number>()
  for (const token of tokens) {
    if (token.kind !== 'option' || (token.name !== 'hash-strategy' && token.name !== 'lab-diagnostics')) continue
    taken.add(token.index)
    if (token.name === 'hash-strategy' && token.inlineValue === false) taken.add(token.index + 1)
  }
  const strategy = String(values['hash-strategy'] ?? 'tollbooth')
  if (!(seedStrategies as readonly string[]).includes(strategy)) {
    throw createError('CONFIG_INVALID', `--hash-strategy must be one of ${seedStrategies.join(', ')}, got "${strategy}"`, { field: 'hash-strategy' })
  }
  return { strategy: strategy as SeedStrategy, labDiagnostics: values['lab-diagnostics'] === true, serveArgs: argv.filter((_, index) => !taken.has(index)) }
}

async function main (argv: string[]): Promise<void> {
  const { strategy, labDiagnostics, serveArgs } = parseHarnessArgs(argv[0] === 'serve' ? argv.slice(1) : argv)
  if (strategy === 'libuv-128' && process.env.UV_THREADPOOL_SIZE !== '128') {
    throw createError('CONFIG_INVALID', 'the libuv-128 strategy needs UV_THREADPOOL_SIZE=128 in the environment before node starts (libuv sizes its pool once, at its first use)', { field: 'hash-strategy' })
  }
  await runServe(serveArgs, harnessOf(strategy, labDiagnostics))
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (isTollboothError(err, 'CONFIG_INVALID')) {
    process.stderr.write(`tollbooth harness: invalid configuration: ${err.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`tollbooth harness: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
