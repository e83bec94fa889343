/**
 * The hash settings `tollbooth calibrate --write` measured for this machine, kept in the data
 * folder: `serve` takes them as its defaults, below every variable and flag. Only the hash
 * settings may be there; the file names each by its variable, as the operator would set it.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createError } from '../errors.js'

const hashCalibrationFileName = 'hash-calibration.json'

/** The settings a calibration may hold: the hash algorithm and its parameters. */
const calibratedSettings = [
  'TOLLBOOTH_HASH_ALGORITHM',
  'TOLLBOOTH_ARGON2_MEMORY_KIB', 'TOLLBOOTH_ARGON2_TIME_COST', 'TOLLBOOTH_ARGON2_PARALLELISM',
  'TOLLBOOTH_BCRYPT_COST',
  'TOLLBOOTH_SCRYPT_N', 'TOLLBOOTH_SCRYPT_R', 'TOLLBOOTH_SCRYPT_P',
] as const

function hashCalibrationPath (dataDir: string): string {
  return path.join(dataDir, hashCalibrationFileName)
}

function invalid (file: string, why: string): Error {
  return createError('CONFIG_INVALID', `${file} (written by tollbooth calibrate --write) ${why}: run tollbooth calibrate --write again, or delete the file`, { field: hashCalibrationFileName })
}

/** The calibrated settings in `dataDir`, or undefined when there is no file; CONFIG_INVALID when it is not one. */
export function readHashCalibration (dataDir: string): { file: string, settings: Record<string, string> } | undefined {
  const file = hashCalibrationPath(dataDir)
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw invalid(file, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw invalid(file, 'is not JSON')
  }
  const settings = (parsed as { settings?: unknown } | null)?.settings
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) throw invalid(file, 'has no "settings" object')
  const known: readonly string[] = calibratedSettings
  for (const [name, value] of Object.entries(settings)) {
    if (!known.includes(name)) throw invalid(file, `holds ${name}, which is not a hash setting`)
    if (typeof value !== 'string') throw invalid(file, `holds ${name} as ${typeof value}, not text`)
  }
  return { file, settings: settings as Record<string, string> }
}

export interface HashCalibrationFile {
  /** Variable -> value, as text (what the environment would hold). */
  settings: Record<string, string>
  /** What was measured, for the reader of the file; the service reads `settings` only. */
  measured: unknown
}

/** Writes the file atomically (a start never reads half of it); returns its path. */
export function writeHashCalibration (dataDir: string, calibration: HashCalibrationFile): string {
  const file = hashCalibrationPath(dataDir)
  fs.mkdirSync(dataDir, { recursive: true })
  const partial = `${file}.${process.pid}.tmp`
  fs.writeFileSync(partial, JSON.stringify(calibration, null, 2) + '\n')
  fs.renameSync(partial, file)
  return file
}
