/**
 * `tollbooth [serve] [flags]` and `tollbooth --help`. The CLI only wires the
 * library parts together; each command lives in its own module.
 */
import { configHelp, loadConfig } from '../config/index.js'
import { isTollboothError } from '../errors.js'
import { packageVersion } from '../paths.js'
import { clusterSize, clusterWorkerConfig, isClusterWorker, startClusterPrimary, startClusterWorker } from '../process/cluster.js'
import { createLogger as logger } from '../http/logger.js'
import { handleSignals, startService } from '../process/start.js'
import { runLabCommand } from './lab-command.js'
import { runMigrateCommand } from './migrate-command.js'
import { clearReadyFile, writeReadyFile } from './ready-file.js'

const usage = `tollbooth ${packageVersion}: an authentication service that keeps answering when a crowd logs in at once

Usage:
  tollbooth [serve] [flags]     run the service (embedded PostgreSQL unless DATABASE_URL is set)
  tollbooth migrate             apply the pending migrations to DATABASE_URL, then exit (a deployment's migration step)
  tollbooth lab ...             the load lab, when @tollbooth/lab is installed: run, knee, compare, scale, report, scenarios (tollbooth lab --help)
  tollbooth --help | --version

Every flag has an environment variable; flags win. See docs/reference/config.md.

Flags:
${configHelp()}
`

async function serve (argv: string[]): Promise<void> {
  if (isClusterWorker()) {
    await startClusterWorker(logger(clusterWorkerConfig().logLevel))
    return
  }
  const config = loadConfig({ argv })
  const log = logger(config.logLevel)
  clearReadyFile(config.readyFile)
  const clustered = config.hashStrategy === 'cluster' || clusterSize(config) > 1
  const service = clustered ? await startClusterPrimary(config, log) : await startService(config, { logger: log })
  handleSignals(service, log)
  writeReadyFile(config.readyFile, { url: service.url, ...(service.adminUrl === undefined ? {} : { adminUrl: service.adminUrl }), pid: process.pid, version: packageVersion, strategy: config.hashStrategy })
}

async function main (argv: string[]): Promise<void> {
  const [command, ...rest] = argv
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(usage)
    return
  }
  if (command === '--version' || command === '-v') {
    process.stdout.write(`${packageVersion}\n`)
    return
  }
  if (command === undefined || command.startsWith('-')) return await serve(argv)
  if (command === 'serve') return await serve(rest)
  if (command === 'migrate') {
    process.exitCode = await runMigrateCommand(rest)
    return
  }
  if (command === 'lab') {
    process.exitCode = await runLabCommand(rest)
    return
  }
  process.stderr.write(`tollbooth: unknown command "${command}"\n\n${usage}`)
  process.exitCode = 2
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (isTollboothError(err, 'CONFIG_INVALID')) {
    process.stderr.write(`tollbooth: invalid configuration: ${err.message}\nRun "tollbooth --help" for the settings.\n`)
    process.exit(2)
  }
  process.stderr.write(`tollbooth: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  if (err instanceof Error && err.cause !== undefined) process.stderr.write(`caused by: ${String(err.cause)}\n`)
  process.exit(1)
})
