/**
 * The lab's command line as one call, for the `tollbooth-lab` bin and for `tollbooth lab`
 * (the service's CLI hands the command over when this package is installed): runs it,
 * prints what went wrong, and resolves to the exit code (2 for a flag or scenario that
 * cannot be run, 1 for anything else).
 */
import { LabError } from '../errors.js'
import { labMain } from './commands.js'

export async function runLab (argv: string[], options: { commandName?: string } = {}): Promise<number> {
  const name = options.commandName ?? 'tollbooth-lab'
  try {
    await labMain(argv)
    return typeof process.exitCode === 'number' ? process.exitCode : 0
  } catch (err) {
    if (err instanceof LabError) {
      process.stderr.write(`${name}: ${err.message}\nRun "${name} --help" for the flags.\n`)
      return 2
    }
    process.stderr.write(`${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    if (err instanceof Error && err.cause !== undefined) process.stderr.write(`caused by: ${String(err.cause)}\n`)
    return 1
  }
}
