/** buildApp(): the Fastify app with every route, no listen (Fastify's testing guide); the caller owns the pool and the engine. */
import { createHmac } from 'node:crypto'
import type http from 'node:http'
import type { Duplex } from 'node:stream'
import type pg from 'pg'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { passkeyRelyingParty, type Config } from '../config/index.js'
import type { PasswordEngine } from '../hashing/index.js'
import { packageVersion } from '../paths.js'
import { performance } from 'node:perf_hooks'
import { AuthService, ChecksUnderWay, type AccessTokens, type LoginThrottlePolicy, openAccessTokens, AccountMailService, AccountService, SessionCheck, PurgeJob, SecondFactorCheck, SecondFactorService, lazyKeyEncryptionKey, PasskeyService } from '../accounts/index.js'
import { RefusalPacer, installDrain, type HashAdmissionOptions, type Drain, createShedding, shedReasons, type ShedReason, type SheddingOptions } from '../overload/index.js'
import { createError } from '../errors.js'
import { clientErrorHandler, connectHandler, frameworkErrorHandler, installErrorHandling } from './error-handler.js'
import { lazyChildLogger, loggerOptions } from './logger.js'
import { createMetrics, type Metrics } from '../metrics/index.js'
import { AuthResponse, ErrorResponse, MailAccepted, Post, RecoveryCodes, SecondFactorChallenge, Session, TotpEnrolment, User } from './schemas.js'
import type { KeyRing } from '../keys/index.js'
import { authRoutes, accountMailRoutes, healthRoutes, metricsRoute, jwksRoutes, postRoutes, accountRoutes, secondFactorRoutes, passkeyRoutes, accountPageRoutes, loadOidcRoutes } from './routes/index.js'
import { Passkey, PasskeyCreationOptions, PasskeyRequestOptions } from './passkey-schemas.js'
import { MailDispatcher, smtpTransport } from '../mail/index.js'
import { installSecurityHeaders, installNoStoreHeaders, securityHeaders, noStoreHeaders } from './security-headers.js'
import { purgeTargets } from '../db/index.js'
import { loggedOutPage, logoutConfirmPage, providerErrorPage } from './pages/index.js'

export interface AppOptions {
  config: Config
  db: pg.Pool
  engine: PasswordEngine
  /** The HS256 secret; unused with TOLLBOOTH_JWT_ALGORITHM EdDSA or ES256 (keys from the key ring). */
  jwtSecret?: string
  /** Wall-clock time in epoch ms for login throttling and the signing keys' schedule; default Date.now (tests move it on). */
  now?: () => number
  /** Monotonic milliseconds for pacing refusals and connections' ages; default performance.now (tests move it on). */
  clock?: () => number
  /** A pino logger config or instance; false silences logs (tests). */
  logger?: FastifyServerOptions['logger'] | FastifyServerOptions['loggerInstance']
  /** One of several processes on one port (process/cluster.ts): /metrics aggregates them all. */
  clusterWorker?: boolean
  /**
   * The database is the embedded one this process started: no other process signs in on it, so
   * this process's own count of password checks under way bounds them, with no lease in PostgreSQL.
   */
  soleProcessOnDatabase?: boolean
  /** What the lab's harness changes (harness/); `tollbooth serve` passes none. */
  harness?: AppHarness
}

/** What the parts of the app a harness's routes may use. */
export interface HarnessRouteParts {
  db: pg.Pool
  auth: AuthService
  accessTokens: AccessTokens
  /** A login's admission: its engine, pacer, kind and deadline. */
  loginAdmission: HashAdmissionOptions
}

/** What the lab's harness changes of the app: the seed articles' services, for side-by-side measurement. */
export interface AppHarness {
  /** Its name in /metrics (`tollbooth_info`'s strategy). */
  strategy: string
  /** false: no load shedding, as the seed articles' services had none. */
  shedding: boolean
  /** Routes added under /api/v1 (the lab's diagnostic logins). */
  apiRoutes?: (api: FastifyInstance, parts: HarnessRouteParts) => Promise<void>
}

/** keyRing: the access-token keys (null with HS256); reload() picks up keys other replicas created. drain: SIGTERM's drain (overload/drain.ts). */
export type TollboothApp = FastifyInstance & { auth: AuthService, metrics: Metrics, keyRing: KeyRing | null, drain: Drain, mail: MailDispatcher, purge: PurgeJob }

/**
 * TOLLBOOTH_TRUST_PROXY in Fastify's terms: a hop count means "trust the n nearest hops" (Express's
 * meaning; Fastify 5 reads a bare number as trusting nothing). docs/reference/config.md says when a count is safe.
 */
export function fastifyTrustProxy (trustProxy: Config['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trustProxy !== 'number') return trustProxy
  if (trustProxy === 0) return false
  return (_address, hop) => hop < trustProxy
}

export function loginThrottlePolicy (config: Config): LoginThrottlePolicy {
  return {
    accountFreeFailures: config.loginThrottleAccountFailures,
    addressFreeFailures: config.loginThrottleAddressFailures,
    addressFreeFailuresPerAccount: config.loginThrottleAddressFailuresPerAccount,
    deviceFreeFailures: config.loginThrottleDeviceFailures,
    windowMs: config.loginThrottleWindowSeconds * 1000,
    baseDelayMs: config.loginThrottleBaseDelaySeconds * 1000,
    maxDelayMs: config.loginThrottleMaxDelaySeconds * 1000,
  }
}

/** The API routes (POST) whose hash queue has its own admission (overload/hash-admission.ts): counted apart from the in-flight cap. */
const ownAdmissionRoutes: ReadonlySet<string> = new Set(['/api/v1/auth/login', '/api/v1/auth/register', '/api/v1/auth/password/reset', '/api/v1/me/password', '/api/v1/me/factors/recovery-codes'])

function sheddingOptions (config: Config, on: boolean, answerHeaders: Readonly<Record<string, string>>, onShed: (reason: ShedReason) => void): SheddingOptions {
  return {
    maxEventLoopDelayMs: on ? config.maxEventLoopDelayMs : 0,
    maxEventLoopUtilization: on ? config.maxEventLoopUtilizationPercent / 100 : 0,
    sampleIntervalMs: config.pressureSampleIntervalMs,
    maxInFlight: on ? config.maxInFlight : 0,
    ownAdmissionRoutes,
    retryAfterSeconds: 1,
    // The in-flight gate's refusal does not know its route: it carries the token routes' no-store
    // as well, so that every answer of theirs does (a refusal is never worth storing anyway).
    answerHeaders: { ...answerHeaders, ...noStoreHeaders },
    onShed,
  }
}

/** What a password check may take past its login's deadline: a verify that started in time runs to its end. */
const checksSettleMarginMs = 5000

/** Until no password check is under way, or `limitMs` has passed (a check is bounded by its deadline). */
async function checksSettled (checks: ChecksUnderWay, limitMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<void>((resolve) => { timer = setTimeout(resolve, limitMs) })
  await Promise.race([checks.whenIdle(), limit])
  clearTimeout(timer)
}

/** Sends the outbox through TOLLBOOTH_SMTP_URL, or writes it to the log when that is unset (mail/). */
function mailDispatcher (config: Config, db: pg.Pool, log: FastifyBaseLogger): MailDispatcher {
  return new MailDispatcher({
    db,
    log: log.child({ component: 'mail' }),
    transport: config.smtpUrl === undefined ? undefined : smtpTransport({ url: config.smtpUrl, from: config.mailFrom, timeoutMs: mailSendTimeoutMs, allowPlaintextLoopback: config.smtpAllowPlaintextLoopback }),
    logLinks: config.mailLogLinks,
    maxAttempts: config.mailMaxAttempts,
    retryDelayMs: config.mailRetryDelayMs,
    pollIntervalMs: config.mailPollIntervalMs,
  })
}

/** The provider's cookie key, the same on every replica: derived from the key-encryption key (or the signing key file's key), never the key itself. */
function oidcCookieKey (secret: Buffer): string {
  return createHmac('sha256', secret).update('tollbooth oidc cookies').digest('base64url')
}

/** Bounds each SMTP step (connect, greeting, each command): well inside the dispatcher's claim lease. */
const mailSendTimeoutMs = 20_000

export async function buildApp (options: AppOptions): Promise<TollboothApp> {
  const { config, db, engine } = options
  const isLoggerInstance = typeof options.logger === 'object' && options.logger !== null && 'child' in options.logger
  const answerHeaders = securityHeaders()
  // Before the app: the in-flight cap sits in the HTTP server the app is made with (overload/in-flight-gate.ts).
  const pacer = new RefusalPacer({ now: options.clock ?? (() => performance.now()) })
  const shedding = createShedding({
    ...sheddingOptions(config, options.harness?.shedding ?? true, answerHeaders, (reason) => { metrics.observeShed(reason) }),
    onRequest: (request) => { pacer.connections.note(request) },
  })
  const app = Fastify({
    ...(isLoggerInstance
      ? { loggerInstance: options.logger as FastifyServerOptions['loggerInstance'] }
      : { logger: (options.logger ?? loggerOptions(config.logLevel)) as FastifyServerOptions['logger'] }),
    bodyLimit: config.bodyLimitBytes,
    // A line per request at info costs more than a refusal: requests are logged at debug and counted in /metrics.
    logController: new LogController({ disableRequestLogging: true }),
    // A request's child logger is made when it first writes a line, not for every request (logger.ts).
    childLoggerFactory: lazyChildLogger as unknown as FastifyServerOptions['childLoggerFactory'],
    // Which X-Forwarded-For hops to believe, so request.ip is the client (login throttling counts by it).
    trustProxy: fastifyTrustProxy(config.trustProxy),
    // Off: Fastify's own shutdown 503 is not in the registry's shape; the onRequest hook below answers instead.
    return503OnClosing: false,
    // The socket-level answers (malformed request, header overflow, timeout) in the registry's shape.
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    requestTimeout: 60_000,
    serverFactory: shedding.serverFactory,
    ajv: {
      // Unknown fields and wrong types are errors, never silently dropped or coerced.
      customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: true, allErrors: false },
    },
  }).withTypeProvider<TypeBoxTypeProvider>()

  // First, so its onRequest hook runs before any that answers early (404, 405, shedding, pacing).
  installSecurityHeaders(app, answerHeaders)
  installNoStoreHeaders(app)
  shedding.installServingMark(app)
  installErrorHandling(app, pacer)
  app.server.on('connect', (request: http.IncomingMessage, socket: Duplex) => { connectHandler(app, request, socket) })
  // JSON only: Fastify's text/plain parser would make a JSON-looking text body a confusing 400, not a 415.
  app.removeContentTypeParser('text/plain')

  app.decorateRequest('userId', '')
  app.decorateRequest('hashTicket', null)

  let closing = false
  app.addHook('preClose', async () => {
    closing = true
    shedding.stopRefusing()
    // node closes only the connections idle at close(); one whose request was in flight would
    // hold the shutdown for Fastify's 72 s keep-alive timeout, past the shutdown limit. Close it
    // right after its last answer (pipelined answers behind it still go out).
    app.server.keepAliveTimeout = 1
  })
  app.addHook('onRequest', async () => {
    // Fastify also sets `connection: close` on these, so the client reconnects elsewhere.
    if (closing) throw createError('SHUTTING_DOWN', undefined, { retryAfterSeconds: 1 })
  })
  // Before the close, on SIGTERM: readiness off, still serving (overload/drain.ts).
  app.decorate('drain', installDrain(app, {
    onPhase: (phase, drainMs) => {
      if (phase === 'draining') app.log.info({ drainMs }, 'draining: /readyz answers 503, requests are still served until the drain ends')
      else app.log.info({ drainMs }, 'drain over: no longer accepting connections; finishing the requests in flight')
    },
  }))

  // Opened once, on first use, for the signing keys and the TOTP secrets alike.
  const keyEncryptionKey = lazyKeyEncryptionKey(config, app.log)
  const { accessTokens, keyRing } = await openAccessTokens({ config, db, jwtSecret: options.jwtSecret, log: app.log, now: options.now ?? Date.now, keyEncryptionKey })
  const mail = mailDispatcher(config, db, app.log)
  const sessions = new SessionCheck(db, config.sessionCheckCacheMs)
  const accountMail = new AccountMailService({
    db,
    sessions,
    engine,
    mail,
    publicUrl: config.publicUrl ?? `http://${config.host}:${config.port}`,
    passwordResetTtlSeconds: config.passwordResetTtlSeconds,
    emailVerificationTtlSeconds: config.emailVerificationTtlSeconds,
    throttle: { accountRequests: config.mailThrottleAccountRequests, addressRequests: config.mailThrottleAddressRequests, mailboxMails: config.mailThrottleMailboxMails, windowSeconds: config.mailThrottleWindowSeconds },
    log: app.log,
  })
  // One count of password checks under way for login and re-entered passwords alike: one throttle.
  const checksUnderWay = new ChecksUnderWay()
  const checkLeases = options.soleProcessOnDatabase === true ? undefined : db
  const secondFactorCheck = new SecondFactorCheck({ db, log: app.log, loginThrottle: loginThrottlePolicy(config), now: options.now ?? Date.now, keyEncryptionKey })
  const auth = new AuthService({
    db,
    engine,
    accessTokens,
    sessions,
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
    sessionMaxLifetimeSeconds: config.sessionMaxLifetimeSeconds,
    refreshGraceSeconds: config.refreshGraceSeconds,
    loginDeadlineMs: config.loginDeadlineMs,
    registerDeadlineMs: config.registerDeadlineMs,
    loginThrottle: loginThrottlePolicy(config),
    registerThrottle: { clientRequests: config.registerThrottleClientRequests, accountRequests: config.registerThrottleAccountRequests, windowSeconds: config.registerThrottleWindowSeconds },
    deviceTtlDays: config.deviceTtlDays,
    checksUnderWay,
    checkLeases,
    log: app.log,
    accountMail,
    unverifiedLogin: config.registrationMode === 'enumeration-safe' ? 'hide' : config.requireVerifiedEmail ? 'refuse' : 'allow',
    secondFactor: { mode: config.secondFactor, check: secondFactorCheck },
    ...(options.now === undefined ? {} : { now: options.now }),
  })
  const metrics = createMetrics(engine, {
    info: { version: packageVersion, strategy: options.harness?.strategy ?? 'tollbooth' },
    clusterWorker: options.clusterWorker ?? false,
    shedReasons,
    pacing: () => ({ held: pacer.held, heldTotal: pacer.heldTotal }),
  })
  const account = new AccountService({
    db,
    engine,
    sessions,
    registerDeadlineMs: config.registerDeadlineMs,
    loginThrottle: loginThrottlePolicy(config),
    checksUnderWay,
    checkLeases,
    log: app.log,
    ...(options.now === undefined ? {} : { now: options.now }),
  })
  const factors = new SecondFactorService({ db, check: secondFactorCheck, account, sessions, mode: config.secondFactor, log: app.log })
  const passkeys = new PasskeyService({ db, relyingParty: passkeyRelyingParty(config), challengeTtlSeconds: config.passkeyChallengeTtlSeconds, sessions, log: app.log })
  const purge = new PurgeJob({ db, targets: purgeTargets, intervalMs: config.purgeIntervalSeconds * 1000, batchSize: config.purgeBatchSize, log: app.log })
  if (config.purgeIntervalSeconds > 0) app.addHook('onReady', async () => { purge.start() })
  app.decorate('purge', purge)
  app.decorate('auth', auth)
  app.decorate('metrics', metrics)
  app.decorate('keyRing', keyRing ?? null)
  app.decorate('mail', mail)

  app.addHook('onResponse', async (request, reply) => {
    request.log.debug({ method: request.method, url: request.url, statusCode: reply.statusCode, responseTimeMs: reply.elapsedTime }, 'request completed')
    metrics.observeRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000)
  })
  app.addHook('onReady', async () => { mail.start() })
  app.addHook('onClose', async () => {
    await keyRing?.close()
    metrics.close()
    await purge.close()
    // Password checks still under way write their outcome first, so a guess whose client hung up is
    // still counted: within a login's deadline plus a margin (a started verify runs to its end).
    await Promise.allSettled([...auth.backgroundJobs, mail.close(), checksSettled(checksUnderWay, config.loginDeadlineMs + checksSettleMarginMs)])
  })

  for (const schema of [ErrorResponse, User, Post, AuthResponse, MailAccepted, Session, SecondFactorChallenge, TotpEnrolment, RecoveryCodes, Passkey, PasskeyCreationOptions, PasskeyRequestOptions]) app.addSchema(schema)

  await app.register(swagger, {
    // Shared schemas appear under their $id (ErrorResponse, User ...) instead of def-0, def-1.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'tollbooth',
        version: packageVersion,
        description: 'Authentication service that keeps answering when a crowd logs in at once.',
      },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
    },
  })

  // With TOLLBOOTH_ADMIN_PORT, /metrics and the readiness details live on the admin listener (process/admin.ts).
  const adminPortServes = config.adminPort !== undefined
  await app.register(healthRoutes, { db, engine, details: !adminPortServes })
  if (!adminPortServes) await app.register(metricsRoute, { metrics })
  await app.register(jwksRoutes, { keyRing, maxAgeSeconds: config.jwksMaxAgeSeconds })
  if (config.accountPage) await app.register(accountPageRoutes, { secondFactor: config.secondFactor })
  // Secure cookies but in development on the embedded database (plain http://localhost).
  const deviceCookie = { secure: config.databaseUrl !== undefined, maxAgeSeconds: config.deviceTtlDays * 86_400 }
  if (config.oidc) {
    // loadConfig refuses TOLLBOOTH_OIDC with HS256: the ring is there.
    if (keyRing === undefined) throw createError('CONFIG_INVALID', 'TOLLBOOTH_OIDC needs the key ring (TOLLBOOTH_JWT_ALGORITHM EdDSA or ES256)')
    // Loaded only when on: a service without the provider never loads oidc-provider.
    const [{ applyClientsFile, CurrentOidcProvider, SessionAccounts }, oidcRoutes] = await Promise.all([import('../oidc/index.js'), loadOidcRoutes()])
    const providers = new CurrentOidcProvider(() => keyRing.signing, {
      issuer: `${(config.publicUrl ?? `http://${config.host}:${config.port}`).replace(/\/+$/, '')}/oidc`,
      db,
      cookieKeys: [oidcCookieKey(keyEncryptionKey() ?? Buffer.from(keyRing.signing.privatePem ?? ''))],
      accounts: new SessionAccounts(db, sessions),
      pages: { error: providerErrorPage, logoutConfirm: logoutConfirmPage, loggedOut: loggedOutPage },
      accessTokenTtlSeconds: config.oidcAccessTokenTtlSeconds,
      interactionTtlSeconds: config.oidcInteractionTtlSeconds,
      refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
      sessionTtlSeconds: config.sessionMaxLifetimeSeconds,
      proxy: config.trustProxy !== false && config.trustProxy !== 0,
      registration: { mode: config.oidcRegistration, token: config.oidcRegistrationToken, throttle: { clientRequests: config.registerThrottleClientRequests, windowSeconds: config.registerThrottleWindowSeconds } },
    })
    if (config.oidcClientsFile !== undefined) {
      const applied = await applyClientsFile(db, config.oidcClientsFile)
      app.log.info({ added: applied.added, updated: applied.updated, removed: applied.removed, unchanged: applied.unchanged.length }, 'OpenID Connect clients applied from the clients file')
    }
    await app.register(oidcRoutes, { providers, keyRing, jwksMaxAgeSeconds: config.jwksMaxAgeSeconds, auth, accessTokens, engine, pacer, loginDeadlineMs: config.loginDeadlineMs, deviceCookie, passkeys })
  }
  metrics.readInFlight(() => ({ capped: shedding.state.inFlight, ownAdmission: shedding.state.inFlightOwnAdmission }))
  // The API in a context of its own: the event-loop check never applies to the routes outside it.
  await app.register(async (api) => {
    await shedding.installEventLoopCheck(api)
    await api.register(authRoutes, {
      prefix: '/api/v1',
      auth,
      accessTokens,
      sessions,
      engine,
      pacer,
      loginDeadlineMs: config.loginDeadlineMs,
      registerDeadlineMs: config.registerDeadlineMs,
      registrationMode: config.registrationMode,
      deviceCookie,
    })
    await api.register(accountMailRoutes, { prefix: '/api/v1', account: accountMail, engine, pacer, registerDeadlineMs: config.registerDeadlineMs })
    await api.register(postRoutes, { prefix: '/api/v1', db, accessTokens, sessions })
    await api.register(accountRoutes, { prefix: '/api/v1', account, accessTokens, sessions, engine, pacer, loginDeadlineMs: config.loginDeadlineMs })
    await api.register(secondFactorRoutes, { prefix: '/api/v1', auth, factors, accessTokens, sessions, engine, pacer, loginDeadlineMs: config.loginDeadlineMs, deviceCookie })
    await api.register(passkeyRoutes, { prefix: '/api/v1', passkeys, auth, accessTokens, sessions, deviceCookie, bodyLimitBytes: config.bodyLimitBytes })
    const harnessRoutes = options.harness?.apiRoutes
    if (harnessRoutes !== undefined) {
      await api.register(async (scope) => {
        await harnessRoutes(scope, { db, auth, accessTokens, loginAdmission: { engine, pacer, kind: 'verify', deadlineMs: config.loginDeadlineMs } })
      }, { prefix: '/api/v1' })
    }
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  return app as unknown as TollboothApp
}
