/**
 * Environment variables and command-line flags -> one validated, typed config (settings.ts
 * declares each setting). Flags win over the environment; secrets come from the environment or
 * a file, never from a flag.
 */
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { createError, isTollboothError } from '../errors.js'
import { parseKeyEncryptionKey } from '../keys/index.js'
import { detectCpuBudget, validatePolicy, type HashPolicy } from '../hashing/index.js'
import { defaultDatabasePoolSize, isLoopbackHost } from './database-pool.js'
import { readHashCalibration } from './hash-calibration.js'
import { passkeyRelyingParty } from './relying-party.js'
import { checkHashMemory, parseHashMemoryBudget, resolveHashMemoryBudget } from './hash-memory.js'
import { settings, type Config, type FlatConfig, type Setting, type TrustProxy } from './settings.js'

function parseValue (setting: Setting, raw: string, origin: string): unknown {
  const where = `${origin} (${setting.env} / --${setting.flag})`
  switch (setting.kind) {
    case 'string':
      if (raw.length === 0) throw createError('CONFIG_INVALID', `${where} must not be empty`)
      return raw
    case 'bool':
      if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true
      if (['0', 'false', 'no', 'off', ''].includes(raw.toLowerCase())) return false
      throw createError('CONFIG_INVALID', `${where} must be true or false, got "${raw}"`)
    case 'enum':
      if (setting.choices?.includes(raw) !== true) {
        throw createError('CONFIG_INVALID', `${where} must be one of ${setting.choices?.join(', ')}, got "${raw}"`)
      }
      return raw
    case 'int': {
      if (!/^-?\d+$/.test(raw.trim())) throw createError('CONFIG_INVALID', `${where} must be a whole number, got "${raw}"`)
      const value = Number(raw)
      if ((setting.min !== undefined && value < setting.min) || (setting.max !== undefined && value > setting.max)) {
        throw createError('CONFIG_INVALID', `${where} must be between ${setting.min} and ${setting.max}, got ${value}`)
      }
      return value
    }
  }
}

export interface LoadConfigInput {
  env?: NodeJS.ProcessEnv
  argv?: string[]
  /** Values that win over env and flags (tests, the lab). */
  overrides?: Partial<FlatConfig>
}

/** Variables tollbooth refuses, each named with where its job is done instead: never silently ignored. */
const retiredSettings: Readonly<Record<string, string>> = {
  TOLLBOOTH_HASH_STRATEGY: 'the seed strategies run under the lab\'s harness (docs/how-to/run-the-lab.md), which the lab starts itself',
  TOLLBOOTH_LAB_DIAGNOSTICS: 'the diagnostic routes run under the lab\'s harness (docs/how-to/run-the-lab.md), which the lab starts itself',
  TOLLBOOTH_READY_FILE: 'give `tollbooth serve --ready-file FILE` instead',
}

/** Parses flags (which win over env) and env into a validated Config; throws CONFIG_INVALID. */
export function loadConfig ({ env = process.env, argv = [], overrides = {} }: LoadConfigInput = {}): Config {
  for (const [name, instead] of Object.entries(retiredSettings)) {
    if (env[name] !== undefined && env[name] !== '') throw createError('CONFIG_INVALID', `${name} is not a setting of the service: ${instead}`, { field: name })
  }
  const options: Record<string, { type: 'string' | 'boolean' }> = {}
  for (const setting of settings) options[setting.flag] = { type: setting.kind === 'bool' ? 'boolean' : 'string' }
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false })
  } catch (err) {
    throw createError('CONFIG_INVALID', (err as Error).message)
  }

  const flat: Record<string, unknown> = {}
  /** Settings neither a flag nor the environment gave: a calibration's values may take their place. */
  const defaulted = new Set<Setting>()
  for (const setting of settings) {
    const fromFlag = parsed.values[setting.flag]
    if (setting.secret === true && fromFlag !== undefined) throw secretFlagRefused(setting)
    const fromEnv = setting.secret === true ? secretFromEnvironment(setting, env) : env[setting.env]
    if (fromFlag !== undefined) {
      flat[setting.key] = parseValue(setting, String(fromFlag), 'flag')
    } else if (fromEnv !== undefined && fromEnv !== '') {
      flat[setting.key] = parseValue(setting, fromEnv, 'environment variable')
    } else {
      defaulted.add(setting)
      if (setting.defaultValue !== undefined) flat[setting.key] = parseValue(setting, setting.defaultValue, 'default')
    }
  }
  const calibration = readHashCalibration(path.resolve(String(overrides.dataDir ?? flat.dataDir)))
  for (const [env, value] of Object.entries(calibration?.settings ?? {})) {
    const setting = settings.find((s) => s.env === env)
    if (setting !== undefined && defaulted.has(setting)) flat[setting.key] = parseValue(setting, value, calibration?.file ?? '')
  }
  Object.assign(flat, overrides)
  // Its default depends on where the database is: a link in a deployment's log is a leaked secret.
  flat.mailLogLinks ??= flat.databaseUrl === undefined
  // A page to try the service: on in development, a deployment turns it on if it wants it.
  flat.accountPage ??= flat.databaseUrl === undefined
  // On the embedded database (development), mail links lead to the service itself; a deployment says where.
  if (flat.databaseUrl === undefined) flat.publicUrl ??= localPublicUrl(String(flat.host), Number(flat.port))
  const c = flat as unknown as FlatConfig

  if (c.jwtSecret !== undefined && c.jwtSecret.length < 32) {
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_JWT_SECRET must be at least 32 characters')
  }
  if (c.databaseUrl !== undefined) {
    try {
      const url = new URL(c.databaseUrl)
      if (!['postgres:', 'postgresql:'].includes(url.protocol)) throw new Error('not postgres')
    } catch {
      throw createError('CONFIG_INVALID', 'DATABASE_URL must be a postgres:// or postgresql:// URL')
    }
    if (c.jwtAlgorithm === 'HS256' && c.jwtSecret === undefined) {
      throw createError('CONFIG_INVALID', 'TOLLBOOTH_JWT_SECRET is required with DATABASE_URL and TOLLBOOTH_JWT_ALGORITHM=HS256 (instances behind one load balancer must share it)')
    }
    if (c.jwtAlgorithm !== 'HS256' && c.signingKeyFile === undefined && c.keyEncryptionKey === undefined) {
      throw createError('CONFIG_INVALID', `TOLLBOOTH_KEY_ENCRYPTION_KEY (or TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE) is required with DATABASE_URL and TOLLBOOTH_JWT_ALGORITHM=${c.jwtAlgorithm}: it seals the signing keys shared by every replica (or give the key as TOLLBOOTH_SIGNING_KEY_FILE, or set TOLLBOOTH_JWT_ALGORITHM=HS256 with TOLLBOOTH_JWT_SECRET)`, { field: 'TOLLBOOTH_KEY_ENCRYPTION_KEY' })
    }
    if (c.secondFactor === 'required' && c.keyEncryptionKey === undefined) {
      throw createError('CONFIG_INVALID', 'TOLLBOOTH_KEY_ENCRYPTION_KEY (or _FILE) is required with DATABASE_URL and TOLLBOOTH_SECOND_FACTOR=required: it seals the TOTP secrets every account must enrol', { field: 'TOLLBOOTH_KEY_ENCRYPTION_KEY' })
    }
  }
  checkTokenSettings(c)
  if (c.adminPort !== undefined && c.adminPort !== 0 && c.adminPort === c.port) {
    throw createError('CONFIG_INVALID', `TOLLBOOTH_ADMIN_PORT must differ from PORT (${c.port}): the admin listener is a second one`, { field: 'TOLLBOOTH_ADMIN_PORT' })
  }
  checkMailSettings(c, env.NODE_ENV === 'production')
  passkeyRelyingParty(c)

  c.trustProxy = parseTrustProxy(c.trustProxy)
  c.workers = parseWorkers(c.workers)
  if (c.loginThrottleMaxDelaySeconds > c.loginThrottleWindowSeconds) {
    throw createError('CONFIG_INVALID', `TOLLBOOTH_LOGIN_THROTTLE_MAX_DELAY_SECONDS (${c.loginThrottleMaxDelaySeconds}) must not exceed TOLLBOOTH_LOGIN_THROTTLE_WINDOW_SECONDS (${c.loginThrottleWindowSeconds}): a wait never outlasts the window it counts in`)
  }

  const { hashAlgorithm, bcryptCost, argon2MemoryKiB, argon2TimeCost, argon2Parallelism, scryptN, scryptR, scryptP, hashMemoryBudget, ...rest } = c
  const hashPolicy: HashPolicy = {
    algorithm: hashAlgorithm,
    argon2: { memoryKiB: argon2MemoryKiB, timeCost: argon2TimeCost, parallelism: argon2Parallelism },
    bcrypt: { cost: bcryptCost },
    scrypt: { N: scryptN, r: scryptR, p: scryptP },
  }
  checkPolicy(hashPolicy)
  // The CPU budget is read from the cgroup files once, for the hash threads' split and the pool's default.
  const machineCpus = detectCpuBudget().cpus
  const processes = hashProcesses(c, machineCpus)
  const hashMemoryBudgetBytes = checkHashMemory(hashPolicy, resolveHashMemoryBudget(parseHashMemoryBudget(hashMemoryBudget)), processes)
  const databasePoolSize = c.databasePoolSize ?? defaultDatabasePoolSize(c.databaseUrl, machineCpus, processes.processes)
  return { ...rest, databasePoolSize, dataDir: path.resolve(c.dataDir), hashPolicy, hashMemoryBudgetBytes, hashCalibrationFile: calibration?.file }
}

/** The processes `serve` runs and the hash threads in each, as process/worker-budget.ts splits the CPU budget. */
function hashProcesses (c: Pick<FlatConfig, 'hashThreads' | 'workers'>, machineCpus: number): { processes: number, threadsPerProcess: number } {
  const cpus = Math.max(1, c.hashThreads ?? machineCpus)
  const processes = c.workers === 0 ? cpus : Math.max(1, c.workers)
  return { processes, threadsPerProcess: Math.max(1, Math.floor(cpus / processes)) }
}

function secretFlagRefused (setting: Setting): Error {
  return createError('CONFIG_INVALID', `--${setting.flag} is refused: a secret on the command line is visible to every user of the machine (ps, /proc). Set ${setting.env} in the environment, or ${setting.env}_FILE to a file that holds it`, { field: setting.env })
}

/** One secret for a command other than `serve` (`tollbooth migrate`), read and refused from a flag as `serve` does. */
export function readSecret (envName: string, env: NodeJS.ProcessEnv, flagValue?: string): string | undefined {
  const setting = settings.find((s) => s.env === envName && s.secret === true)
  if (setting === undefined) throw new TypeError(`${envName} is not a secret setting`)
  if (flagValue !== undefined) throw secretFlagRefused(setting)
  const value = secretFromEnvironment(setting, env)
  return value === '' ? undefined : value
}

/** A secret's value: its variable, or the file `<env>_FILE` names (one trailing newline dropped). */
function secretFromEnvironment (setting: Setting, env: NodeJS.ProcessEnv): string | undefined {
  const value = env[setting.env]
  const fileVariable = `${setting.env}_FILE`
  const file = env[fileVariable]
  if (file === undefined || file === '') return value
  if (value !== undefined && value !== '') {
    throw createError('CONFIG_INVALID', `set ${setting.env} or ${fileVariable}, not both`, { field: setting.env })
  }
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    throw createError('CONFIG_INVALID', `cannot read ${fileVariable} (${file}): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { field: fileVariable })
  }
  const secret = text.replace(/\r?\n$/, '')
  if (secret.length === 0) throw createError('CONFIG_INVALID', `${fileVariable} (${file}) is empty`, { field: fileVariable })
  return secret
}

/** The token settings that only make sense together (the key material itself is read at start). */
function checkTokenSettings (c: FlatConfig): void {
  if (c.keyEncryptionKey !== undefined) parseKeyEncryptionKey(c.keyEncryptionKey, 'TOLLBOOTH_KEY_ENCRYPTION_KEY')
  if (c.jwtAlgorithm === 'HS256' && c.signingKeyFile !== undefined) {
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_SIGNING_KEY_FILE needs TOLLBOOTH_JWT_ALGORITHM EdDSA or ES256, not HS256', { field: 'TOLLBOOTH_SIGNING_KEY_FILE' })
  }
  if (c.oidc && c.jwtAlgorithm === 'HS256') {
    // An ID token is verified by parties that must not hold the secret that signs it.
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_OIDC needs TOLLBOOTH_JWT_ALGORITHM EdDSA or ES256: ID tokens are never signed with the shared HS256 secret', { field: 'TOLLBOOTH_OIDC' })
  }
  checkOidcClientSettings(c)
  if (c.verificationKeyFiles !== undefined && c.signingKeyFile === undefined) {
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_VERIFICATION_KEY_FILES needs TOLLBOOTH_SIGNING_KEY_FILE', { field: 'TOLLBOOTH_VERIFICATION_KEY_FILES' })
  }
}

/** Where the provider's clients come from: settings that mean nothing without it, or without each other, are refused. */
function checkOidcClientSettings (c: FlatConfig): void {
  const needsProvider = (env: string): void => {
    if (!c.oidc) throw createError('CONFIG_INVALID', `${env} needs TOLLBOOTH_OIDC=true`, { field: env })
  }
  if (c.oidcClientsFile !== undefined) needsProvider('TOLLBOOTH_OIDC_CLIENTS_FILE')
  if (c.oidcRegistration !== 'off') needsProvider('TOLLBOOTH_OIDC_REGISTRATION')
  if (c.oidcRegistration === 'token' && (c.oidcRegistrationToken === undefined || c.oidcRegistrationToken.length < 32)) {
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_OIDC_REGISTRATION=token needs TOLLBOOTH_OIDC_REGISTRATION_TOKEN of at least 32 characters (openssl rand -base64 32)', { field: 'TOLLBOOTH_OIDC_REGISTRATION_TOKEN' })
  }
  if (c.oidcRegistration !== 'token' && c.oidcRegistrationToken !== undefined) {
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_OIDC_REGISTRATION_TOKEN goes with TOLLBOOTH_OIDC_REGISTRATION=token', { field: 'TOLLBOOTH_OIDC_REGISTRATION_TOKEN' })
  }
}

/** http://HOST:PORT, with localhost for a wildcard HOST (0.0.0.0, ::): no link leads to 0.0.0.0. */
function localPublicUrl (host: string, port: number): string {
  const name = ['', '0.0.0.0', '::', '[::]'].includes(host) ? 'localhost' : net.isIPv6(host) ? `[${host}]` : host
  return `http://${name}:${port}`
}

/** The mail settings, checked at start rather than at the first mail; the messages never repeat the SMTP URL (it may hold a password). */
function checkMailSettings (c: FlatConfig, production: boolean): void {
  const parse = (value: string | undefined, env: string, protocols: string[]): URL | undefined => {
    if (value === undefined) return undefined
    let url: URL
    try {
      url = new URL(value)
    } catch {
      throw createError('CONFIG_INVALID', `${env} must be a URL (${protocols.join(' or ')})`, { field: env })
    }
    if (!protocols.includes(url.protocol)) throw createError('CONFIG_INVALID', `${env} must be a ${protocols.join(' or ')} URL`, { field: env })
    return url
  }
  const smtp = parse(c.smtpUrl, 'TOLLBOOTH_SMTP_URL', ['smtp:', 'smtps:'])
  if (smtp !== undefined && (smtp.search !== '' || smtp.hash !== '' || !['', '/'].includes(smtp.pathname))) {
    // nodemailer would read options from a query (?ignoreTLS=true): the settings say how mail is sent, not the URL.
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_SMTP_URL takes a scheme, user:password@, host and port only: no path, query or fragment', { field: 'TOLLBOOTH_SMTP_URL' })
  }
  if (c.smtpAllowPlaintextLoopback) {
    if (production) {
      throw createError('CONFIG_INVALID', 'TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK is refused with NODE_ENV=production: mail is sent over TLS (smtps://) or STARTTLS', { field: 'TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK' })
    }
    if (smtp !== undefined && !isLoopbackHost(smtp.hostname)) {
      throw createError('CONFIG_INVALID', 'TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK is only for an SMTP server on this machine (127.0.0.0/8, ::1, localhost); TOLLBOOTH_SMTP_URL names another host', { field: 'TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK' })
    }
  }
  const publicUrl = parse(c.publicUrl, 'TOLLBOOTH_PUBLIC_URL', ['http:', 'https:'])
  if (publicUrl === undefined) {
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_PUBLIC_URL is required with DATABASE_URL: the base of the links in mails (for instance https://app.example.com), the page that posts their token to the API', { field: 'TOLLBOOTH_PUBLIC_URL' })
  }
  if (production && publicUrl.protocol !== 'https:') {
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_PUBLIC_URL must be an https:// URL with NODE_ENV=production: the links in mails carry reset and verification tokens', { field: 'TOLLBOOTH_PUBLIC_URL' })
  }
}

/** Most worker processes `--workers` starts (each holds a database pool and at least one hash thread). */
const maxWorkers = 256

/** TOLLBOOTH_WORKERS as text (or a number, from overrides) -> a count; 0 means one per CPU of the budget (`auto`). */
export function parseWorkers (raw: unknown): number {
  const text = String(raw).trim().toLowerCase()
  if (text === 'auto') return 0
  if (/^\d+$/.test(text) && Number(text) <= maxWorkers) return Number(text)
  throw createError('CONFIG_INVALID', `TOLLBOOTH_WORKERS / --workers must be auto or a whole number from 0 to ${maxWorkers}, got "${String(raw)}"`, { field: 'TOLLBOOTH_WORKERS' })
}

/** proxy-addr's names for address ranges, accepted in a trust list as Fastify does. */
const trustProxyNames = new Set(['loopback', 'linklocal', 'uniquelocal'])

function isAddressOrCidr (entry: string): boolean {
  if (trustProxyNames.has(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const family = net.isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  // A prefix length, or (IPv4 only) a dotted netmask, as proxy-addr takes.
  if (/^\d{1,3}$/.test(prefix)) return Number(prefix) <= (family === 4 ? 32 : 128)
  return family === 4 && net.isIPv4(prefix)
}

/** TOLLBOOTH_TRUST_PROXY as text (or a value already typed, from overrides) -> Fastify's `trustProxy`. */
export function parseTrustProxy (raw: unknown): TrustProxy {
  if (typeof raw === 'boolean' || (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0)) return raw
  if (Array.isArray(raw) && raw.every((entry) => typeof entry === 'string' && isAddressOrCidr(entry))) return raw as string[]
  const text = String(raw).trim()
  if (['true', 'false'].includes(text.toLowerCase())) return text.toLowerCase() === 'true'
  if (/^\d+$/.test(text)) return Number(text)
  const entries = text.split(',').map((entry) => entry.trim())
  const bad = entries.find((entry) => !isAddressOrCidr(entry))
  if (bad !== undefined) {
    throw createError('CONFIG_INVALID', `TOLLBOOTH_TRUST_PROXY / --trust-proxy must be true, false, a hop count, or a comma-separated list of addresses and CIDRs; "${bad}" is none of these`, { field: 'TOLLBOOTH_TRUST_PROXY' })
  }
  return entries
}

/** Each policy field and the setting it comes from, so a refusal names what the operator set. */
const policySettings: Record<string, keyof FlatConfig> = {
  'policy.algorithm': 'hashAlgorithm',
  'policy.argon2.memoryKiB': 'argon2MemoryKiB',
  'policy.argon2.timeCost': 'argon2TimeCost',
  'policy.argon2.parallelism': 'argon2Parallelism',
  'policy.bcrypt.cost': 'bcryptCost',
  'policy.scrypt.N': 'scryptN',
  'policy.scrypt.r': 'scryptR',
  'policy.scrypt.p': 'scryptP',
}

/** The engine's policy check at load time: combinations each range allows alone (scrypt N=2^20, r=8) stop the start here. */
function checkPolicy (policy: HashPolicy): void {
  try {
    validatePolicy(policy)
  } catch (err) {
    if (!isTollboothError(err, 'CONFIG_INVALID') || err.field === undefined) throw err
    const setting = settings.find((s) => s.key === policySettings[err.field ?? ''])
    if (setting === undefined) throw err
    const message = err.message.startsWith(err.field) ? err.message.slice(err.field.length).trimStart() : err.message
    throw createError('CONFIG_INVALID', `${setting.env} / --${setting.flag} ${message}`, { field: setting.env })
  }
}

/** The settings for `tollbooth --help`: what an operator sets first, then the tuning. */
export function configHelp (): string {
  const line = (s: Setting): string => {
    const def = s.defaultValue === undefined ? '' : ` (default ${s.defaultValue})`
    const choices = s.choices === undefined ? '' : ` [${s.choices.join(' | ')}]`
    if (s.secret === true) return `  ${'(secret: no flag)'.padEnd(28)} ${s.env} or ${s.env}_FILE\n      ${s.description}`
    return `  --${s.flag.padEnd(26)} ${s.env}${choices}${def}\n      ${s.description}`
  }
  const tier = (name: Setting['tier']): string => settings.filter((s) => s.tier === name).map(line).join('\n')
  return `Operator settings:\n${tier('operator')}\n\nTuning (the defaults fit most deployments; several are derived from the machine):\n${tier('tuning')}`
}
