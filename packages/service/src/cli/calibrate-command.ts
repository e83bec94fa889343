/**
 * `tollbooth calibrate [--algorithm A] [--target-ms MS] [--memory BUDGET] [--threads N] [--write] [--json]`:
 * measures on this machine, with every hash thread busy, the hash parameters that take the
 * target time, never below OWASP's minimum and within the memory budget, and prints them as the
 * settings to give; `--write` keeps them in the data folder, where `serve` takes them as its
 * defaults. Exit codes: 0 done (the output says when the target could not be met), 2 a usage or
 * configuration fault.
 */
import path from 'node:path'
import { parseArgs } from 'node:util'
import { calibrate, describeParams, envSettingsOf, renderCalibration, type Calibration } from '../calibrate/index.js'
import { parseHashMemoryBudget, resolveHashMemoryBudget, writeHashCalibration } from '../config/index.js'
import { createError, isTollboothError } from '../errors.js'
import { detectCpuBudget, hashAlgorithms, type HashAlgorithm } from '../hashing/index.js'

/** A hash that takes a quarter of a second: 4 logins a second a core, and an attacker's guesses as slow. */
const defaultTargetMs = 250

const calibrateUsage = `Usage:
  tollbooth calibrate [--algorithm argon2id|bcrypt|scrypt] [--target-ms MS] [--memory BUDGET] [--threads N] [--write] [--json]

Measures on this machine, with every hash thread busy at once, the parameters whose hash takes
--target-ms (default ${defaultTargetMs}), never below OWASP's minimum and with threads × one hash's
memory within the budget, and prints them as settings.
  --algorithm   argon2id (default), bcrypt or scrypt
  --memory      what the hash threads may hold together: 50% (of the memory limit) or a size, 2GiB
                (default TOLLBOOTH_HASH_MEMORY_BUDGET, or 50%)
  --threads     hash threads (default TOLLBOOTH_HASH_THREADS, or the CPU budget)
  --write       keep the result in the data folder (--data-dir, or TOLLBOOTH_DATA_DIR, or ./.tollbooth):
                npm start and tollbooth serve take it as their hash defaults, below the environment and flags
  --data-dir    the data folder --write writes to
  --json        the result as JSON
Run it with nothing else busy on the machine. See docs/how-to/tune.md.
`

type Write = (text: string) => void

export interface CalibrateCommandOptions {
  env?: NodeJS.ProcessEnv
  writeOut?: Write
  writeError?: Write
}

interface Command {
  algorithm: HashAlgorithm
  targetMs: number
  threads: number
  memory: string
  /** Where `memory` came from, for messages. */
  memoryFrom: string
  dataDir: string
  write: boolean
  json: boolean
}

function usageError (message: string): Error {
  return createError('CONFIG_INVALID', `${message}\n\n${calibrateUsage}`)
}

function wholeNumber (text: string, flag: string, min: number, max: number): number {
  const value = Number(text)
  if (!/^\d+$/.test(text.trim()) || value < min || value > max) throw usageError(`${flag} must be a whole number from ${min} to ${max}, got "${text}"`)
  return value
}

function parseCommand (argv: string[], env: NodeJS.ProcessEnv): Command | 'help' {
  let values
  try {
    values = parseArgs({
      args: argv,
      options: {
        algorithm: { type: 'string' },
        'target-ms': { type: 'string' },
        memory: { type: 'string' },
        threads: { type: 'string' },
        'data-dir': { type: 'string' },
        write: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values
  } catch (err) {
    throw usageError((err as Error).message)
  }
  if (values.help === true) return 'help'
  const algorithm = values.algorithm ?? 'argon2id'
  if (!(hashAlgorithms as readonly string[]).includes(algorithm)) throw usageError(`--algorithm must be one of ${hashAlgorithms.join(', ')}, got "${algorithm}"`)
  const threadsText = values.threads ?? env.TOLLBOOTH_HASH_THREADS
  return {
    algorithm: algorithm as HashAlgorithm,
    targetMs: wholeNumber(values['target-ms'] ?? String(defaultTargetMs), '--target-ms', 1, 60_000),
    threads: threadsText === undefined || threadsText === '' ? detectCpuBudget().cpus : wholeNumber(threadsText, '--threads', 1, 256),
    memory: values.memory ?? (env.TOLLBOOTH_HASH_MEMORY_BUDGET !== undefined && env.TOLLBOOTH_HASH_MEMORY_BUDGET !== '' ? env.TOLLBOOTH_HASH_MEMORY_BUDGET : '50%'),
    memoryFrom: values.memory === undefined ? 'TOLLBOOTH_HASH_MEMORY_BUDGET' : '--memory',
    dataDir: path.resolve(values['data-dir'] ?? (env.TOLLBOOTH_DATA_DIR !== undefined && env.TOLLBOOTH_DATA_DIR !== '' ? env.TOLLBOOTH_DATA_DIR : './.tollbooth')),
    write: values.write === true,
    json: values.json === true,
  }
}

/** What --write keeps: the settings, and what they were measured with for the reader. */
function calibrationFile (c: Calibration): { settings: Record<string, string>, measured: unknown } {
  return {
    settings: envSettingsOf(c.chosen),
    measured: {
      targetMs: c.targetMs,
      outcome: c.outcome,
      allThreadsMs: Math.round(c.final.medianMs * 10) / 10,
      threads: c.threads,
      verifiesPerSecond: Math.round(c.final.verifiesPerSecond * 10) / 10,
      fullConcurrencyBytes: c.fullConcurrencyBytes,
      memoryBudgetBytes: c.memoryBudget.bytes,
      machine: c.machine,
    },
  }
}

/** Runs the command; returns its exit code. */
export async function runCalibrateCommand (argv: string[], { env = process.env, writeOut = (text) => process.stdout.write(text), writeError = (text) => process.stderr.write(text) }: CalibrateCommandOptions = {}): Promise<number> {
  try {
    const command = parseCommand(argv, env)
    if (command === 'help') {
      writeOut(calibrateUsage)
      return 0
    }
    const memoryBudget = resolveHashMemoryBudget(parseHashMemoryBudget(command.memory), command.memoryFrom)
    const result = await calibrate({
      algorithm: command.algorithm,
      targetMs: command.targetMs,
      threads: command.threads,
      memoryBudget,
      onMeasurement: command.json ? undefined : (m) => { writeError(`  ${m.kind === 'quick' ? 'measured' : 'confirmed'} ${describeParams(m.hash)}: ${m.ms.toFixed(1)} ms\n`) },
    })
    const written = command.write ? writeHashCalibration(command.dataDir, calibrationFile(result)) : undefined
    writeOut(command.json ? JSON.stringify({ ...result, settings: envSettingsOf(result.chosen), written: written ?? null }, null, 2) + '\n' : renderCalibration(result, written))
    return 0
  } catch (err) {
    if (!isTollboothError(err, 'CONFIG_INVALID')) throw err
    writeError(`tollbooth calibrate: ${err.message}\n`)
    return 2
  }
}
