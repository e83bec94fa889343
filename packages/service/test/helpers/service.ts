import { performance } from 'node:perf_hooks'
import net, { type AddressInfo } from 'node:net'
import type pino from 'pino'
import { Agent, fetch as undiciFetch } from 'undici'
import { loadConfig, type Config, type FlatConfig } from '../../src/config/index.js'
import { createPasswordEngine } from '../../src/hashing/index.js'
import type { HashPolicy, PasswordEngine } from '../../src/hashing/types.js'
import { buildApp, type AppHarness, type TollboothApp } from '../../src/http/app.js'
import { createLogger } from '../../src/http/logger.js'
import { createTestDatabase, type TestDatabase } from './database.js'
import { cheapPolicy } from './policies.js'

export { cheapPolicy, seedPolicy } from './policies.js'

export const testJwtSecret = 'test-secret-that-is-at-least-32-characters-long'
/** Seals the test services' signing keys (EdDSA, the default) in their databases. */
export const testKeyEncryptionKey = 'dGVzdCBrZXktZW5jcnlwdGlvbiBrZXksIDMyIGJ5dGU='
/** The base of test services' mail links (required with DATABASE_URL); mail tests set their own. */
const testPublicUrl = 'http://127.0.0.1'

/**
 * What most tests need of accounts: registration signs in at once (their accounts are made and
 * used in one go), and registrations many enough that a test's own never meet the bound. The tests
 * of registration's default mode and of its throttle set theirs.
 */
const testAccountSettings = { registrationMode: 'immediate', registerThrottleClientRequests: 1_000_000, registerThrottleAccountRequests: 1_000_000 } as const
export const testAccountEnv = {
  TOLLBOOTH_REGISTRATION_MODE: testAccountSettings.registrationMode,
  TOLLBOOTH_REGISTER_THROTTLE_CLIENT_REQUESTS: String(testAccountSettings.registerThrottleClientRequests),
  TOLLBOOTH_REGISTER_THROTTLE_ACCOUNT_REQUESTS: String(testAccountSettings.registerThrottleAccountRequests),
}

/**
 * The environment of a real `tollbooth serve` process on a test database: cheap bcrypt, EdDSA with the
 * test's key-encryption key (no inherited HS256 secret), a loopback public URL, any port, no drain, logs at
 * info; `extra` on top.
 */
export function serveEnv (databaseUrl: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TOLLBOOTH_KEY_ENCRYPTION_KEY: testKeyEncryptionKey,
    TOLLBOOTH_PUBLIC_URL: testPublicUrl,
    PORT: '0',
    TOLLBOOTH_LOG_LEVEL: 'info',
    TOLLBOOTH_HASH_ALGORITHM: 'bcrypt',
    TOLLBOOTH_BCRYPT_COST: '4',
    TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0',
    // No shedding on event-loop delay unless a test asks for it: on a loaded machine (CI beside
    // other suites) a replica's loop is delayed by its neighbours, not by its own load.
    TOLLBOOTH_MAX_EVENT_LOOP_DELAY_MS: '0',
    ...testAccountEnv,
  }
  delete env.TOLLBOOTH_JWT_SECRET
  delete env.TOLLBOOTH_JWT_ALGORITHM
  // The secrets are set above; an inherited _FILE beside one would be refused as "both".
  for (const name of ['DATABASE_URL_FILE', 'TOLLBOOTH_JWT_SECRET_FILE', 'TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE']) delete env[name]
  return { ...env, ...extra }
}

/** serveEnv for a service on the embedded database of `dataDir` (no DATABASE_URL), whose data folder keeps its key-encryption key. */
export function embeddedServeEnv (dataDir: string): NodeJS.ProcessEnv {
  const env = serveEnv('')
  delete env.DATABASE_URL
  delete env.TOLLBOOTH_KEY_ENCRYPTION_KEY
  env.TOLLBOOTH_DATA_DIR = dataDir
  return env
}

/**
 * The mail dispatcher's poll in test services: none within a test (mail a request queues is sent
 * at once all the same), so a poll never takes a pooled connection in the middle of a test that
 * counts them (the database-outage tests run on a pool of one). Mail tests set their own.
 */
const testMailPollIntervalMs = 600_000

export interface TestService {
  app: TollboothApp
  /** http://127.0.0.1:<port> of a real listening socket. */
  url: string
  db: TestDatabase
  engine: PasswordEngine
  config: Config
  close (): Promise<void>
}

export interface TestServiceOptions {
  policy?: HashPolicy
  threads?: number
  maxQueue?: number
  /** The hash threads' nice value; default the engine's (below the event loop). */
  threadNice?: number
  /** Settings by their key in the config (settings.ts); a key that is none fails to compile. */
  config?: Partial<FlatConfig>
  /** Reuse a database (e.g. to restart with another policy). */
  db?: TestDatabase
  /** A logger to read what the service logs; default: none. */
  logger?: pino.Logger
  /** The service's wall clock (epoch ms) for login throttling; default Date.now. */
  now?: () => number
  /** What the lab's harness changes of the app (its diagnostic routes, say); default: none, as production. */
  harness?: AppHarness
  /** The service's monotonic clock for pacing and connections' ages; default performance.now (`movableClock` moves one). */
  clock?: () => number
  /** The port to listen on (a browser test's origin is set in the config before the start: `freePort`); default any free one. */
  port?: number
  /** As a service on the embedded database it started: no lease in PostgreSQL for password checks under way (app.ts); default false, as with DATABASE_URL. */
  soleProcessOnDatabase?: boolean
}

/** A loopback port free a moment ago: for a service whose settings name its own origin before it listens. */
export async function freePort (): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve, reject) => { server.once('error', reject).listen(0, '127.0.0.1', resolve) })
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => { server.close(() => { resolve() }) })
  return port
}

/** performance.now(), and a way to move it on: a test ages a connection or waits out a Retry-After without sleeping. */
export function movableClock (): { now: () => number, advance: (ms: number) => void } {
  let offsetMs = 0
  return { now: () => performance.now() + offsetMs, advance: (ms) => { offsetMs += ms } }
}

export async function startTestService (options: TestServiceOptions = {}): Promise<TestService> {
  const db = options.db ?? await createTestDatabase()
  // No shedding on event-loop delay unless a test asks for it (shedding.test.ts does): the service
  // shares its loop with the test's clients and sync work, and a loaded machine delays that loop.
  const config = { ...loadConfig({ env: {}, overrides: { jwtSecret: testJwtSecret, keyEncryptionKey: testKeyEncryptionKey, databaseUrl: db.url, publicUrl: testPublicUrl, logLevel: 'silent', mailPollIntervalMs: testMailPollIntervalMs, maxEventLoopDelayMs: 0, ...testAccountSettings, ...options.config } }) }
  config.hashPolicy = options.policy ?? cheapPolicy
  const engine = await createPasswordEngine({
    policy: config.hashPolicy,
    threads: options.threads ?? 2,
    ...(options.maxQueue === undefined ? {} : { maxQueue: options.maxQueue }),
    ...(options.threadNice === undefined ? {} : { threadNice: options.threadNice }),
  })
  const app = await buildApp({ config, db: db.pool, engine, jwtSecret: testJwtSecret, logger: options.logger ?? false, ...(options.now === undefined ? {} : { now: options.now }), ...(options.harness === undefined ? {} : { harness: options.harness }), ...(options.clock === undefined ? {} : { clock: options.clock }), soleProcessOnDatabase: options.soleProcessOnDatabase === true })
  await app.listen({ host: '127.0.0.1', port: options.port ?? 0 })
  const { port } = app.server.address() as AddressInfo
  const ownsDb = options.db === undefined
  return {
    app,
    url: `http://127.0.0.1:${port}`,
    db,
    engine,
    config,
    async close () {
      await app.close()
      await engine.close()
      if (ownsDb) await db.drop()
    },
  }
}

export interface JsonResponse<T = any> {
  status: number
  headers: Headers
  body: T
}

const agentsByAddress = new Map<string, Agent>()

/**
 * An HTTP client whose connections leave from `address`, another loopback address
 * (127.0.0.2 ...): a distinct client as the service sees it (its address and its
 * connections), on this one machine.
 */
function clientFrom (address: string): Agent {
  let agent = agentsByAddress.get(address)
  if (agent === undefined) {
    agent = new Agent({ localAddress: address })
    agentsByAddress.set(address, agent)
  }
  return agent
}

export interface RequestOptions {
  body?: unknown
  token?: string
  headers?: Record<string, string>
  /** Send from this loopback address (a client of its own); default 127.0.0.1. */
  from?: string
  /** Send through this client (its own connections); takes the place of `from`. */
  dispatcher?: Agent
}

/** A real HTTP request over the socket. `body` objects are sent as JSON; strings are sent as they are. */
export async function request<T = any> (service: { url: string }, method: string, path: string, options: RequestOptions = {}): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...options.headers }
  let body: string | undefined
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
    headers['content-type'] ??= 'application/json'
  }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  const dispatcher = options.dispatcher ?? (options.from === undefined ? undefined : clientFrom(options.from))
  const init = { method, headers, ...(body === undefined ? {} : { body }), ...(dispatcher === undefined ? {} : { dispatcher }) }
  const response = await undiciFetch(service.url + path, init)
  const text = await response.text()
  let parsed: unknown = text
  if ((response.headers.get('content-type') ?? '').includes('application/json') && text.length > 0) parsed = JSON.parse(text)
  return { status: response.status, headers: response.headers as Headers, body: parsed as T }
}

let counter = 0
export function uniqueEmail (label = 'user'): string {
  counter += 1
  return `${label}.${process.pid}.${Date.now()}.${counter}@example.com`
}

/** A pino logger, redacting as the service's does, that keeps every line it writes, parsed. */
export function capturingLogger (level = 'info'): { logger: pino.Logger, lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const logger = createLogger(level, { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>) } })
  return { logger, lines }
}

export async function registerUser (service: { url: string }, overrides: { email?: string, password?: string, name?: string } = {}): Promise<{ email: string, password: string, body: any }> {
  const email = overrides.email ?? uniqueEmail()
  const password = overrides.password ?? 'correct horse battery staple'
  const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email, password, ...(overrides.name === undefined ? {} : { name: overrides.name }) } })
  if (response.status !== 201) throw new Error(`register failed: ${response.status} ${JSON.stringify(response.body)}`)
  return { email, password, body: response.body }
}
