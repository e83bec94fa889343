/**
 * `tollbooth [serve] [flags]` and `tollbooth --help`. The CLI only wires the
 * library parts together; each command lives in its own module.
 */
import { configHelp } from '../config/index.js'
import { isTollboothError } from '../errors.js'
import { runCalibrateCommand } from './calibrate-command.js'
import { packageVersion } from '../paths.js'
import { runKeysCommand } from './keys-command.js'
import { runLabCommand } from './lab-command.js'
import { runMigrateCommand } from './migrate-command.js'
import { runServe } from './serve.js'
import { runUsersCommand } from './users-command.js'

const usage = `tollbooth ${packageVersion}: an authentication service that keeps answering when a crowd logs in at once

Usage:
  tollbooth [serve] [flags]     run the service (embedded PostgreSQL unless DATABASE_URL is set)
  tollbooth migrate             apply the pending migrations to DATABASE_URL (the migration role), grant TOLLBOOTH_RUNTIME_ROLE
                                (or --runtime-role) the rows, then exit (a deployment's migration step)
  tollbooth keys list | rotate [--now] | retire KID   the access-token signing keys (tollbooth keys --help)
  tollbooth calibrate [--algorithm A] [--target-ms MS] [--write]   the hash parameters for this machine (tollbooth calibrate --help)
  tollbooth clients add | list | remove   the OpenID Connect provider's relying parties (tollbooth clients --help)
  tollbooth users import FILE [--dry-run]   create accounts from another system's export, their password hashes kept (tollbooth users --help)
  tollbooth lab ...             the load lab, when @tollbooth/lab is installed: run, knee, compare, scale, report, scenarios (tollbooth lab --help)
  tollbooth --help | --version

Every flag has an environment variable; flags win. See docs/reference/config.md.
--ready-file FILE: once listening, write {"url", "pid", "version", "strategy"} there as JSON
(for programs that start the service: docs/reference/launcher.md).

${configHelp()}
`

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
  if (command === undefined || command.startsWith('-')) return await runServe(argv)
  if (command === 'serve') return await runServe(rest)
  if (command === 'migrate') {
    process.exitCode = await runMigrateCommand(rest)
    return
  }
  if (command === 'keys') {
    process.exitCode = await runKeysCommand(rest)
    return
  }
  if (command === 'calibrate') {
    process.exitCode = await runCalibrateCommand(rest)
    return
  }
  if (command === 'clients') {
    // Loaded on demand: the provider library is for this command and a service with TOLLBOOTH_OIDC only.
    const { runClientsCommand } = await import('./clients-command.js')
    process.exitCode = await runClientsCommand(rest)
    return
  }
  if (command === 'users') {
    process.exitCode = await runUsersCommand(rest)
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
