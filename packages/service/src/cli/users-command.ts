/**
 * `tollbooth users import FILE`: accounts from another system, one JSON object a line, their
 * passwords' hashes as that system stored them (docs/how-to/import-users.md). Settings from the
 * environment, as the service's: DATABASE_URL, or the embedded PostgreSQL of the service running
 * from TOLLBOOTH_DATA_DIR. Exit codes: 0 every line imported or already present, 1 some lines
 * rejected (the others imported) or the database failed, 2 a usage or configuration fault.
 */
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { once } from 'node:events'
import type { Writable } from 'node:stream'
import { parseArgs } from 'node:util'
import { loadConfig, type Config } from '../config/index.js'
import { isTollboothError } from '../errors.js'
import { createDatabasePool, isConnectionFailure, runningEmbeddedPostgresUrl } from '../db/index.js'
import { detectCpuBudget, storedMemoryBound } from '../hashing/index.js'
import {
  defaultImportBatchSize, firebaseHashParams, importUsers, ImportReport, parseFirebaseParamsFile, renderSummary, type FirebaseParamsText, type ImportSummary,
} from '../accounts/index.js'

const usersUsage = `Usage:
  tollbooth users import FILE [options]   create the accounts of a JSON Lines file (FILE, or - for standard input):
                                          {"email", "name"?, "emailVerified"?, "passwordHash"?, "passwordSalt"?} a line,
                                          the hash as the old system stored it; an email that has an account is left as it is

Options:
  --dry-run                    check every line and look up which emails are present; write nothing
  --report FILE                write every line not imported as JSON Lines ({"line", "outcome", "code"?, "reason"?, "email"})
                               (default: the rejected lines as text on standard error)
  --json                       the summary as JSON on standard output
  --batch-size N               accounts a transaction, 1 to 10000 (default ${defaultImportBatchSize})
  --no-reset-mail              accounts without a password get no reset link (by default each is mailed one)
  --firebase-params FILE       a Firebase project's password hash parameters (the console's text, or JSON), for lines
                               with passwordHash and passwordSalt from firebase auth:export; or each of them:
  --firebase-signer-key B64 --firebase-salt-separator B64 --firebase-rounds N --firebase-mem-cost N

Settings from the environment, as the service's: DATABASE_URL; without it, the embedded PostgreSQL of the
service running from TOLLBOOTH_DATA_DIR (default ./.tollbooth). See docs/how-to/import-users.md.
`

type Write = (text: string) => void

export interface UsersCommandOptions {
  env?: NodeJS.ProcessEnv
  writeOut?: Write
  writeError?: Write
  /** Where lines not imported go without --report (default standard error). */
  errorStream?: Writable
  /** The file `-` reads (default standard input). */
  stdin?: NodeJS.ReadableStream
}

class Refusal extends Error {
  constructor (message: string, readonly exitCode: 1 | 2) {
    super(message)
  }
}

interface ImportCommand {
  file: string
  dryRun: boolean
  reportFile: string | undefined
  json: boolean
  batchSize: number
  resetMail: boolean
  firebase: FirebaseParamsText | undefined
}

const options = {
  'dry-run': { type: 'boolean' },
  report: { type: 'string' },
  json: { type: 'boolean' },
  'batch-size': { type: 'string' },
  'no-reset-mail': { type: 'boolean' },
  'firebase-params': { type: 'string' },
  'firebase-signer-key': { type: 'string' },
  'firebase-salt-separator': { type: 'string' },
  'firebase-rounds': { type: 'string' },
  'firebase-mem-cost': { type: 'string' },
} as const

function firebaseOptions (values: Record<string, string | boolean | undefined>): FirebaseParamsText | undefined {
  const flags: FirebaseParamsText = {
    signerKey: values['firebase-signer-key'] as string | undefined,
    saltSeparator: values['firebase-salt-separator'] as string | undefined,
    rounds: values['firebase-rounds'] as string | undefined,
    memCost: values['firebase-mem-cost'] as string | undefined,
  }
  const file = values['firebase-params'] as string | undefined
  const anyFlag = Object.values(flags).some((value) => value !== undefined)
  if (file !== undefined && anyFlag) throw new Refusal(`give --firebase-params or the --firebase-* values, not both\n\n${usersUsage}`, 2)
  if (file === undefined) return anyFlag ? flags : undefined
  try {
    return parseFirebaseParamsFile(fs.readFileSync(file, 'utf8'))
  } catch (err) {
    if (isTollboothError(err)) throw err
    throw new Refusal(`cannot read --firebase-params ${file}: ${(err as Error).message}`, 2)
  }
}

function parseCommand (argv: string[]): ImportCommand {
  let parsed
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: true })
  } catch (err) {
    throw new Refusal(`${(err as Error).message}\n\n${usersUsage}`, 2)
  }
  const [action, file, ...extra] = parsed.positionals
  if (action !== 'import') throw new Refusal(`${action === undefined ? 'name a command' : `unknown command "${action}"`}\n\n${usersUsage}`, 2)
  if (file === undefined) throw new Refusal(`import needs the file to read (or - for standard input)\n\n${usersUsage}`, 2)
  if (extra.length > 0) throw new Refusal(`unexpected argument "${String(extra[0])}"\n\n${usersUsage}`, 2)
  const batchText = parsed.values['batch-size'] ?? String(defaultImportBatchSize)
  const batchSize = /^[1-9][0-9]{0,4}$/.test(batchText) ? Number(batchText) : 0
  if (batchSize < 1 || batchSize > 10_000) throw new Refusal(`--batch-size must be an integer from 1 to 10000, got ${JSON.stringify(batchText)}`, 2)
  return {
    file,
    dryRun: parsed.values['dry-run'] === true,
    reportFile: parsed.values.report,
    json: parsed.values.json === true,
    batchSize,
    resetMail: parsed.values['no-reset-mail'] !== true,
    firebase: firebaseOptions(parsed.values),
  }
}

/** DATABASE_URL, or the embedded PostgreSQL a service runs from the data folder now; a dry run may go without. */
function databaseUrl (config: Config, dryRun: boolean): string | undefined {
  if (config.databaseUrl !== undefined) return config.databaseUrl
  const url = runningEmbeddedPostgresUrl(path.join(config.dataDir, 'pg'))
  if (url === undefined && !dryRun) throw new Refusal(`no DATABASE_URL, and no embedded PostgreSQL is running from ${config.dataDir} (TOLLBOOTH_DATA_DIR): start the service from that folder (npm start) and run this while it runs, or set DATABASE_URL`, 1)
  return url
}

async function closeStream (stream: Writable): Promise<void> {
  stream.end()
  await once(stream, 'finish')
}

async function run (command: ImportCommand, config: Config, io: Required<Pick<UsersCommandOptions, 'writeOut' | 'errorStream' | 'stdin'>>): Promise<number> {
  // Checked before a line is read: a wrong parameter would reject every Firebase line.
  const firebase = command.firebase === undefined ? undefined : firebaseHashParams(command.firebase)
  let input: AsyncIterable<Buffer | string>
  if (command.file === '-') {
    input = io.stdin as AsyncIterable<Buffer | string>
  } else {
    try {
      fs.accessSync(command.file, fs.constants.R_OK)
    } catch (err) {
      throw new Refusal(`cannot read ${command.file}: ${(err as Error).message}`, 2)
    }
    input = fs.createReadStream(command.file, { highWaterMark: 256 * 1024 })
  }
  const reportStream = command.reportFile === undefined ? io.errorStream : fs.createWriteStream(command.reportFile)
  const report = new ImportReport(reportStream, command.reportFile === undefined ? 'text' : 'jsonl')
  const url = databaseUrl(config, command.dryRun)
  const pool = url === undefined ? undefined : createDatabasePool(url, 2, { acquireTimeoutMs: 10_000, log: { warn: () => {} } })
  const publicUrl = config.publicUrl ?? `http://${config.host}:${config.port}`
  let summary: ImportSummary
  try {
    summary = await importUsers({
      input,
      db: pool,
      dryRun: command.dryRun,
      report,
      firebase,
      // The bound a login on this machine applies: the hash threads' share of the memory budget.
      memoryBound: storedMemoryBound(config.hashThreads ?? detectCpuBudget().cpus, config.hashMemoryBudgetBytes),
      resetMail: command.resetMail ? { publicUrl, ttlSeconds: config.passwordResetTtlSeconds } : undefined,
      batchSize: command.batchSize,
    })
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code === '42P01') throw new Refusal('the database has no users table: run `tollbooth migrate` (or start the service once) before importing', 1)
    if (!isTollboothError(err, 'DATABASE_UNAVAILABLE') && !isConnectionFailure(err)) throw err
    const where = config.databaseUrl === undefined ? `the embedded PostgreSQL of ${config.dataDir} (has the service stopped?)` : 'the database at DATABASE_URL'
    throw new Refusal(`cannot reach ${where}: ${(err as Error).message}. The batches written so far are committed; run the same file again to finish (their lines are then already present)`, 1)
  } finally {
    await pool?.end()
    if (command.reportFile !== undefined) await closeStream(reportStream)
  }
  io.writeOut(command.json ? `${JSON.stringify(summary)}\n` : renderSummary(summary))
  return summary.rejected > 0 ? 1 : 0
}

export async function runUsersCommand (argv: string[], options: UsersCommandOptions = {}): Promise<number> {
  const out = options.writeOut ?? ((text) => { process.stdout.write(text) })
  const error = options.writeError ?? ((text) => { process.stderr.write(text) })
  try {
    if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help' || (argv[0] === 'import' && (argv[1] === '--help' || argv[1] === '-h'))) {
      out(usersUsage)
      return 0
    }
    const command = parseCommand(argv)
    // The service's own settings (database, data folder, public URL, reset links' lifetime) read as
    // it reads them; the import signs no token, so the signing key's settings are not asked for.
    const config = loadConfig({ env: options.env ?? process.env, overrides: { jwtAlgorithm: 'HS256', jwtSecret: randomBytes(32).toString('base64url'), signingKeyFile: undefined } })
    return await run(command, config, { writeOut: out, errorStream: options.errorStream ?? process.stderr, stdin: options.stdin ?? process.stdin })
  } catch (err) {
    if (err instanceof Refusal) {
      error(`tollbooth users: ${err.message}\n`)
      return err.exitCode
    }
    if (isTollboothError(err, 'CONFIG_INVALID')) {
      error(`tollbooth users: invalid configuration: ${err.message}\n`)
      return 2
    }
    throw err
  }
}
