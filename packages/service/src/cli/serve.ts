/**
 * `tollbooth serve`: one process, or `--workers` processes on one port; SIGINT and SIGTERM stop
 * it (SIGTERM after a drain). `--ready-file FILE` is the command's own flag, not a setting: once
 * the service listens, `{ url, adminUrl?, pid, version, strategy }` is written there (ready-file.ts)
 * for the program that started it (the launcher API, a supervisor).
 */
import { parseArgs } from 'node:util'
import { loadConfig } from '../config/index.js'
import { packageVersion } from '../paths.js'
import { createLogger } from '../http/index.js'
import { clusterSize, clusterWorkerConfig, handleSignals, hashMallocReexec, isClusterWorker, startClusterPrimary, startClusterWorker, startService, type ServiceHarness } from '../process/index.js'
import { clearReadyFile, writeReadyFile } from './ready-file.js'

/** `--ready-file` taken out of the arguments; the rest are the service's settings. */
function takeReadyFile (argv: string[]): { readyFile: string | undefined, settings: string[] } {
  const { tokens } = parseArgs({ args: argv, strict: false, tokens: true, allowPositionals: true, options: { 'ready-file': { type: 'string' } } })
  const taken = tokens.find((token) => token.kind === 'option' && token.name === 'ready-file')
  if (taken === undefined || taken.kind !== 'option') return { readyFile: undefined, settings: argv }
  const settings = argv.filter((_, index) => index !== taken.index && !(taken.inlineValue === false && index === taken.index + 1))
  return { readyFile: taken.value, settings }
}

/** Runs the service until a signal stops it; `harness` is the lab's (harness/): `tollbooth serve` passes none. */
export async function runServe (argv: string[], harness?: ServiceHarness): Promise<void> {
  if (isClusterWorker()) {
    await startClusterWorker(createLogger(clusterWorkerConfig().logLevel), harness)
    return
  }
  const { readyFile, settings } = takeReadyFile(argv)
  const config = loadConfig({ argv: settings })
  harness?.checkConfig?.(config)
  const log = createLogger(config.logLevel)
  // Once per service: a cluster's workers inherit the settings, not the re-execution.
  const reexec = hashMallocReexec()
  if (reexec !== undefined) log.info(reexec, 'malloc settings for hashing applied: node started again with glibc\'s settings that let each hash thread keep its scrypt buffer (TOLLBOOTH_MALLOC_SETTINGS=off leaves the environment as given)')
  clearReadyFile(readyFile)
  const started = clusterSize(config, harness) > 1 ? startClusterPrimary(config, log, harness) : startService(config, { logger: log, ...(harness === undefined ? {} : { harness }) })
  // Before the start, not after it: a signal sent once the log says "listening" must not find
  // the default action (exit at once, the embedded database left running).
  handleSignals(started, log)
  const service = await started
  writeReadyFile(readyFile, { url: service.url, ...(service.adminUrl === undefined ? {} : { adminUrl: service.adminUrl }), pid: process.pid, version: packageVersion, strategy: harness?.strategy ?? 'tollbooth' })
}
