/**
 * `tollbooth keys list | rotate [--now] | retire KID`: the access-token signing keys kept in
 * PostgreSQL, for an operator. The settings come from the environment, as the service's do
 * (DATABASE_URL, TOLLBOOTH_KEY_ENCRYPTION_KEY or their _FILE, TOLLBOOTH_JWT_ALGORITHM ...); without
 * DATABASE_URL, the embedded PostgreSQL of the service running from TOLLBOOTH_DATA_DIR. Every
 * change is notified to the replicas with its transaction: they reload the keys within a second.
 * Exit codes: 0 done, 1 refused or failed (an unknown kid, the database), 2 a usage or configuration fault.
 */
import { parseArgs } from 'node:util'
import { loadConfig, type Config } from '../config/index.js'
import { isTollboothError } from '../errors.js'
import { CommandRefusal, withCommandPool } from './command-database.js'
import { listKeys, parseKeyEncryptionKey, readPersistedKeyEncryptionKey, retireKey, rotateKey, type KeyAdminOptions, type KeyCreation, type ListedKey, type SigningAlgorithm } from '../keys/index.js'

const keysUsage = `Usage:
  tollbooth keys list [--json]           every signing key: kid, alg, created, activates, retired, state (which one signs now)
  tollbooth keys rotate [--now] [--json] create the next key: published at once, signing after the publication delay
                                         (TOLLBOOTH_SIGNING_KEY_RELOAD_SECONDS + TOLLBOOTH_JWKS_MAX_AGE_SECONDS), or at once with --now
  tollbooth keys retire KID [--json]     retire a key at once: every replica stops signing and verifying with it within a second;
                                         retiring the key that signs creates its successor, signing at once, in the same step

Settings from the environment, as the service's: DATABASE_URL and TOLLBOOTH_KEY_ENCRYPTION_KEY (or
their _FILE); without DATABASE_URL, the embedded PostgreSQL of the service running from
TOLLBOOTH_DATA_DIR (default ./.tollbooth). See docs/reference/cli.md.
`

type Write = (text: string) => void

export interface KeysCommandOptions {
  env?: NodeJS.ProcessEnv
  writeOut?: Write
  writeError?: Write
}

interface Command {
  action: 'list' | 'rotate' | 'retire'
  kid: string | undefined
  now: boolean
  json: boolean
}

/**
 * A kid is a base64url thumbprint and may begin with '-' (one in 64 does), which parseArgs would
 * take for a short option: every argument that is not a long option (and all after '--') is
 * marked as a positional before parsing, since the command has no short options.
 */
function withKidsAsPositionals (argv: string[]): string[] {
  const end = argv.indexOf('--')
  const head = end === -1 ? argv : argv.slice(0, end)
  const tail = end === -1 ? [] : argv.slice(end + 1)
  const options = head.filter((arg) => arg.startsWith('--'))
  const positionals = head.filter((arg) => !arg.startsWith('--'))
  return [...options, '--', ...positionals, ...tail]
}

function parseCommand (argv: string[]): Command {
  let parsed
  try {
    parsed = parseArgs({ args: withKidsAsPositionals(argv), options: { now: { type: 'boolean' }, json: { type: 'boolean' } }, strict: true, allowPositionals: true })
  } catch (err) {
    throw new CommandRefusal(`${(err as Error).message}\n\n${keysUsage}`, 2)
  }
  const [action, kid, ...extra] = parsed.positionals
  const now = parsed.values.now === true
  const json = parsed.values.json === true
  if (action !== 'list' && action !== 'rotate' && action !== 'retire') throw new CommandRefusal(`${action === undefined ? 'name a command' : `unknown command "${action}"`}\n\n${keysUsage}`, 2)
  if (action === 'retire' && kid === undefined) throw new CommandRefusal(`retire needs the kid of the key to retire (tollbooth keys list shows them)\n\n${keysUsage}`, 2)
  if ((action !== 'retire' && kid !== undefined) || extra.length > 0) throw new CommandRefusal(`unexpected argument "${action === 'retire' ? String(extra[0]) : String(kid)}"\n\n${keysUsage}`, 2)
  if (now && action !== 'rotate') throw new CommandRefusal(`--now belongs to rotate\n\n${keysUsage}`, 2)
  return { action, kid, now, json }
}

/** The signing algorithm of the config, or a refusal when the keys are not in the database. */
function storedKeysAlgorithm (config: Config): SigningAlgorithm {
  if (config.jwtAlgorithm === 'HS256') throw new CommandRefusal('TOLLBOOTH_JWT_ALGORITHM is HS256: access tokens are signed with the shared secret TOLLBOOTH_JWT_SECRET, and no key is stored. Change the secret on every replica to rotate it (every token in flight is then refused).', 2)
  if (config.signingKeyFile !== undefined) throw new CommandRefusal(`the signing key is the file TOLLBOOTH_SIGNING_KEY_FILE (${config.signingKeyFile}), not a stored key: rotate it by a rolling restart, the new file as TOLLBOOTH_SIGNING_KEY_FILE and the old one in TOLLBOOTH_VERIFICATION_KEY_FILES until its tokens have expired (docs/how-to/verify-tokens.md)`, 2)
  return config.jwtAlgorithm
}

/** TOLLBOOTH_KEY_ENCRYPTION_KEY (or its _FILE), or the one a service on the embedded database keeps in its data folder. */
function keyEncryptionKey (config: Config): Buffer {
  if (config.keyEncryptionKey !== undefined) return parseKeyEncryptionKey(config.keyEncryptionKey, 'TOLLBOOTH_KEY_ENCRYPTION_KEY')
  if (config.databaseUrl === undefined) {
    const persisted = readPersistedKeyEncryptionKey(config.dataDir)
    if (persisted !== undefined) return persisted.key
  }
  throw new CommandRefusal('set TOLLBOOTH_KEY_ENCRYPTION_KEY (or TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE), the one the replicas seal their keys with: a new key is sealed under it', 2)
}

const iso = (ms: number | undefined): string => (ms === undefined ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'))

function keyJson (key: ListedKey): Record<string, unknown> {
  return { kid: key.kid, alg: key.alg, createdAt: iso(key.createdAtMs), activatesAt: iso(key.activatesAtMs), retiredAt: key.retiredAtMs === undefined ? null : iso(key.retiredAtMs), state: key.state }
}

function keyTable (keys: readonly ListedKey[]): string {
  if (keys.length === 0) return 'no signing key yet: the service creates the first one as it starts\n'
  const rows = [['', 'kid', 'alg', 'created', 'activates', 'retired', 'state'], ...keys.map((key) => [key.state === 'signing' ? '*' : '', key.kid, key.alg, iso(key.createdAtMs), iso(key.activatesAtMs), iso(key.retiredAtMs), key.state])]
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? []
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd()).join('\n') + '\n* signs now\n'
}

function whenItSigns (key: ListedKey, nowMs: number): string {
  if (key.activatesAtMs <= nowMs) return 'it signs now; a verifier whose cached JWK Set lacks it must fetch the set again (jose does on an unknown kid)'
  return `published now, it signs from ${iso(key.activatesAtMs)} (in ${Math.round((key.activatesAtMs - nowMs) / 1000)} s), when every verifier's cached JWK Set knows it`
}

async function run (command: Command, config: Config, out: Write): Promise<number> {
  const alg = storedKeysAlgorithm(config)
  const creation = (): KeyCreation => ({ keyEncryptionKey: keyEncryptionKey(config), alg })
  // Before connecting: a missing key-encryption key is a configuration fault, whatever the database.
  const forChange = command.action === 'list' ? undefined : creation()
  return await withCommandPool(config, async (pool) => {
    const options: KeyAdminOptions = { db: pool, accessTokenTtlMs: config.accessTokenTtlSeconds * 1000, now: Date.now }
    if (command.action === 'list') {
      const keys = await listKeys(options)
      out(command.json ? `${JSON.stringify({ keys: keys.map(keyJson) })}\n` : keyTable(keys))
      return 0
    }
    if (forChange === undefined) throw new Error('a change needs its key-encryption key')
    if (command.action === 'rotate') {
      // The delay the service's own rotation uses (access-tokens.ts): a reload interval, the JWK Set's cache lifetime.
      const delayMs = command.now ? 0 : (config.signingKeyReloadSeconds + config.jwksMaxAgeSeconds) * 1000
      const key = await rotateKey(options, forChange, delayMs)
      out(command.json ? `${JSON.stringify({ created: keyJson(key) })}\n` : `created key ${key.kid} (${key.alg}): ${whenItSigns(key, Date.now())}\n`)
      return 0
    }
    const kid = command.kid ?? ''
    const retirement = await retireKey(options, forChange, kid)
    if (retirement.outcome === 'unknown') throw new CommandRefusal(`no signing key has the kid "${kid}" (tollbooth keys list shows them)`, 1)
    if (command.json) {
      const replacement = retirement.outcome === 'retired' && retirement.replacement !== undefined ? keyJson(retirement.replacement) : null
      out(`${JSON.stringify({ retired: keyJson(retirement.key), alreadyRetired: retirement.outcome === 'already-retired', created: replacement })}\n`)
    } else if (retirement.outcome === 'already-retired') {
      out(`key ${kid} was already retired (${iso(retirement.key.retiredAtMs)}): nothing to do\n`)
    } else {
      out(`retired key ${kid}: every replica stops signing and verifying with it within a second; its tokens are refused (401 AUTH_TOKEN_INVALID)\n`)
      if (retirement.replacement !== undefined) out(`created key ${retirement.replacement.kid} (${retirement.replacement.alg}) in its place, as it was the key that signed: it signs now\n`)
    }
    return 0
  })
}

export async function runKeysCommand (argv: string[], options: KeysCommandOptions = {}): Promise<number> {
  const out = options.writeOut ?? ((text) => { process.stdout.write(text) })
  const error = options.writeError ?? ((text) => { process.stderr.write(text) })
  try {
    if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
      out(keysUsage)
      return 0
    }
    const command = parseCommand(argv)
    // The environment only: flags here are the command's own.
    const config = loadConfig({ env: options.env ?? process.env })
    return await run(command, config, out)
  } catch (err) {
    if (err instanceof CommandRefusal) {
      error(`tollbooth keys: ${err.message}\n`)
      return err.exitCode
    }
    if (isTollboothError(err, 'CONFIG_INVALID')) {
      error(`tollbooth keys: invalid configuration: ${err.message}\n`)
      return 2
    }
    if (isTollboothError(err, 'SIGNING_KEY_UNREADABLE')) {
      error(`tollbooth keys: ${err.message}. Nothing was changed: give the key-encryption key the replicas use.\n`)
      return 1
    }
    throw err
  }
}
