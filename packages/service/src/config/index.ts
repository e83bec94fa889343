/**
 * Environment variables + command-line flags -> one validated, typed config.
 * Every setting is declared once in `settings` below; docs/reference/config.md
 * documents each one (a test keeps the two in step).
 */
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { createError, isTollboothError } from '../errors.js'
import { validatePolicy } from '../hashing/index.js'
import { parseKeyEncryptionKey } from '../keys/sealing.js'
import { hashAlgorithms, hashStrategies, type HashAlgorithm, type HashPolicy, type HashStrategy } from '../hashing/types.js'

/** `cluster` is not an executor: it forks one process per CPU, each with a plain Piscina pool. */
export const serviceStrategies = [...hashStrategies, 'cluster'] as const
export const databaseStatementKinds = ['named', 'unnamed'] as const
export type DatabaseStatements = typeof databaseStatementKinds[number]
export type ServiceStrategy = HashStrategy | 'cluster'

/** The hash settings arrive flat (one variable each) and leave grouped as a HashPolicy. */
type FlatHashSettings = 'hashAlgorithm' | 'bcryptCost' | 'argon2MemoryKiB' | 'argon2TimeCost' | 'argon2Parallelism' | 'scryptN' | 'scryptR' | 'scryptP'

export type Config = Omit<FlatConfig, FlatHashSettings> & { hashPolicy: HashPolicy }

type Kind = 'string' | 'int' | 'bool' | 'enum'

interface Setting {
  key: keyof FlatConfig
  env: string
  flag: string
  kind: Kind
  defaultValue: string | undefined
  description: string
  min?: number
  max?: number
  choices?: readonly string[]
  /**
   * A secret: read from the environment variable or from a file named by `<env>_FILE` (a mounted
   * secret), never from a flag, which every user of the machine can read (ps, /proc/<pid>/cmdline).
   * `flag` is kept only to refuse it with a message that says where the value goes instead.
   */
  secret?: true
}

/** The config as flat settings, one per variable, before grouping into `Config`. */
interface FlatConfig {
  host: string
  port: number
  /** Undefined: start the embedded PostgreSQL in `dataDir`. */
  databaseUrl: string | undefined
  dataDir: string
  databasePoolSize: number
  /** The deadline on getting a pooled connection (waiting or connecting). */
  databaseAcquireTimeoutMs: number
  /** `named`: queries with parameters go as named prepared statements (src/db/prepared-client.ts). */
  databaseStatements: DatabaseStatements
  hashAlgorithm: HashAlgorithm
  bcryptCost: number
  argon2MemoryKiB: number
  argon2TimeCost: number
  argon2Parallelism: number
  scryptN: number
  scryptR: number
  scryptP: number
  hashStrategy: ServiceStrategy
  /** Undefined: size the pool to the CPU budget. */
  hashThreads: number | undefined
  hashMaxQueue: number | undefined
  hashThreadNice: number
  /** `serve --workers`: processes on one port sharing the CPU budget (src/server/cluster.ts); 0: one per CPU. 1: one process. */
  workers: number
  loginDeadlineMs: number
  registerDeadlineMs: number
  /** Undefined in embedded mode: generated once and kept in the data folder. */
  jwtSecret: string | undefined
  /** How access tokens are signed: an asymmetric key from the key ring (src/keys/), or the HMAC secret. */
  jwtAlgorithm: 'EdDSA' | 'ES256' | 'HS256'
  /** Seals the private signing keys in PostgreSQL; undefined in embedded mode: generated into the data folder. */
  keyEncryptionKey: string | undefined
  /** PEM files instead of keys in PostgreSQL: the one that signs, and older ones that still verify. */
  signingKeyFile: string | undefined
  verificationKeyFiles: string | undefined
  signingKeyRotationSeconds: number
  signingKeyReloadSeconds: number
  jwksMaxAgeSeconds: number
  accessTokenTtlSeconds: number
  refreshTokenTtlSeconds: number
  bodyLimitBytes: number
  logLevel: string
  /** Where /metrics and the readiness details are served instead of the API port; undefined: on the API port. */
  adminPort: number | undefined
  adminHost: string
  /** Exposes the load lab's diagnostic routes (never on by default). */
  labDiagnostics: boolean
  /** Where to write `{ url, pid, version, strategy }` once listening (src/cli/ready-file.ts); undefined: nowhere. */
  readyFile: string | undefined
  loginThrottleAccountFailures: number
  loginThrottleAddressFailures: number
  loginThrottleWindowSeconds: number
  loginThrottleBaseDelaySeconds: number
  loginThrottleMaxDelaySeconds: number
  /** Fastify's `trustProxy`: which hops' X-Forwarded-For to believe for the client address. */
  trustProxy: TrustProxy
  /** Load shedding of the API routes (src/server/shedding.ts); 0 turns a check off. */
  maxInFlight: number
  maxEventLoopDelayMs: number
  maxEventLoopUtilizationPercent: number
  pressureSampleIntervalMs: number
  /** Connections the kernel may queue for accept (capped by net.core.somaxconn). */
  listenBacklog: number
  /** Open connections at most; 0: no cap. Also what the file-descriptor check at start plans for. */
  maxConnections: number
  /** Listening descriptors for the service's socket (src/server/acceptors.ts). */
  acceptors: number
  /** On SIGTERM: how long /readyz answers 503 while everything else is still served (src/server/drain.ts). */
  shutdownDrainMs: number
  /** Mail (src/mail/): undefined SMTP URL: mail is written to the log. The URL may hold a password. */
  smtpUrl: string | undefined
  /**
   * Without an SMTP URL: whether a mail written to the log carries its text (the link). Unset:
   * yes with the embedded database (development), no with DATABASE_URL (a deployment).
   */
  mailLogLinks: boolean
  /** Base of the links in mails; undefined: http://<host>:<port>. */
  publicUrl: string | undefined
  mailFrom: string
  mailMaxAttempts: number
  mailRetryDelayMs: number
  mailPollIntervalMs: number
  passwordResetTtlSeconds: number
  emailVerificationTtlSeconds: number
  mailThrottleAccountRequests: number
  mailThrottleAddressRequests: number
  mailThrottleWindowSeconds: number
  requireVerifiedEmail: boolean
  registrationMode: 'immediate' | 'enumeration-safe'
  /** A session's absolute lifetime from its sign-in: no refresh token of it outlives this. */
  sessionMaxLifetimeSeconds: number
  /** How long a rotated refresh token still gets its successor again (a retry, a second tab) instead of counting as reuse. */
  refreshGraceSeconds: number
  /** How long a "session is live" answer is remembered per process (src/server/session-check.ts). */
  sessionCheckCacheMs: number
  /** The purge job (src/server/purge-job.ts): how often it runs (0: never), and rows per statement. */
  purgeIntervalSeconds: number
  purgeBatchSize: number
}

/** false: the socket's peer is the client; true: every hop; a number: that many hops; a list: those proxies. */
export type TrustProxy = boolean | number | string[]

export const settings: readonly Setting[] = [
  { key: 'host', env: 'HOST', flag: 'host', kind: 'string', defaultValue: '127.0.0.1', description: 'Address the HTTP server listens on.' },
  { key: 'port', env: 'PORT', flag: 'port', kind: 'int', defaultValue: '3000', min: 0, max: 65535, description: 'TCP port of the HTTP server (0 picks a free one).' },
  { key: 'databaseUrl', env: 'DATABASE_URL', flag: 'database-url', kind: 'string', secret: true, defaultValue: undefined, description: 'PostgreSQL connection string. Unset: tollbooth starts its embedded PostgreSQL in the data folder.' },
  { key: 'dataDir', env: 'TOLLBOOTH_DATA_DIR', flag: 'data-dir', kind: 'string', defaultValue: './.tollbooth', description: 'Folder for the embedded database and the keys made for it (the key-encryption key; with HS256, the JWT secret). Nothing is written there with DATABASE_URL.' },
  { key: 'databasePoolSize', env: 'TOLLBOOTH_DB_POOL_SIZE', flag: 'db-pool-size', kind: 'int', defaultValue: '10', min: 1, max: 200, description: 'Connections in the PostgreSQL client pool.' },
  { key: 'databaseAcquireTimeoutMs', env: 'TOLLBOOTH_DB_ACQUIRE_TIMEOUT_MS', flag: 'db-acquire-timeout-ms', kind: 'int', defaultValue: '1000', min: 10, max: 60000, description: 'How long a request may wait for a database connection (behind busy ones, or connecting a new one) before it is answered 503: SERVICE_OVERLOADED when every connection is busy, DATABASE_UNAVAILABLE when the database does not answer.' },
  { key: 'databaseStatements', env: 'TOLLBOOTH_DB_STATEMENTS', flag: 'db-statements', kind: 'enum', choices: databaseStatementKinds, defaultValue: 'named', description: '`named`: each query with parameters goes as a named prepared statement, parsed and planned once per database connection (about half of PostgreSQL\'s CPU for a cheap request). `unnamed`: parsed and planned at every call, as pg does; for a connection pooler in transaction mode that does not keep named statements (PgBouncer before 1.21, or without max_prepared_statements).' },
  { key: 'hashAlgorithm', env: 'TOLLBOOTH_HASH_ALGORITHM', flag: 'hash-algorithm', kind: 'enum', choices: hashAlgorithms, defaultValue: 'argon2id', description: 'Algorithm for new password hashes; stored hashes of the others keep verifying and are re-hashed on login.' },
  { key: 'bcryptCost', env: 'TOLLBOOTH_BCRYPT_COST', flag: 'bcrypt-cost', kind: 'int', defaultValue: '10', min: 4, max: 16, description: 'bcrypt cost (log2 rounds).' },
  { key: 'argon2MemoryKiB', env: 'TOLLBOOTH_ARGON2_MEMORY_KIB', flag: 'argon2-memory-kib', kind: 'int', defaultValue: '19456', min: 1024, max: 262144, description: 'argon2id memory in KiB (OWASP: 19456).' },
  { key: 'argon2TimeCost', env: 'TOLLBOOTH_ARGON2_TIME_COST', flag: 'argon2-time-cost', kind: 'int', defaultValue: '2', min: 1, max: 16, description: 'argon2id iterations (OWASP: 2).' },
  { key: 'argon2Parallelism', env: 'TOLLBOOTH_ARGON2_PARALLELISM', flag: 'argon2-parallelism', kind: 'int', defaultValue: '1', min: 1, max: 16, description: 'argon2id lanes (OWASP: 1).' },
  { key: 'scryptN', env: 'TOLLBOOTH_SCRYPT_N', flag: 'scrypt-n', kind: 'int', defaultValue: '32768', min: 1024, max: 1048576, description: 'scrypt CPU/memory cost N, a power of two, with 128·N·r at most 256 MiB (N at most 262144 at r=8).' },
  { key: 'scryptR', env: 'TOLLBOOTH_SCRYPT_R', flag: 'scrypt-r', kind: 'int', defaultValue: '8', min: 1, max: 32, description: 'scrypt block size r.' },
  { key: 'scryptP', env: 'TOLLBOOTH_SCRYPT_P', flag: 'scrypt-p', kind: 'int', defaultValue: '1', min: 1, max: 16, description: 'scrypt parallelism p.' },
  { key: 'hashStrategy', env: 'TOLLBOOTH_HASH_STRATEGY', flag: 'hash-strategy', kind: 'enum', choices: serviceStrategies, defaultValue: 'tollbooth', description: 'Where hashing runs. `tollbooth` (the default) is the CPU-budgeted worker pool with deadlines and admission; the others reproduce the seed articles for the load lab (see docs/guides/load-lab.md); `cluster` forks one process per CPU, each with a default Piscina pool.' },
  { key: 'hashThreads', env: 'TOLLBOOTH_HASH_THREADS', flag: 'hash-threads', kind: 'int', defaultValue: undefined, min: 1, max: 256, description: 'Hash worker threads. Unset: the CPU this process really has (cgroup quota, affinity, cores).' },
  { key: 'hashMaxQueue', env: 'TOLLBOOTH_HASH_MAX_QUEUE', flag: 'hash-max-queue', kind: 'int', defaultValue: undefined, min: 1, max: 1000000, description: 'Hard cap on queued hash requests. Unset: the engine default (64 per thread).' },
  { key: 'hashThreadNice', env: 'TOLLBOOTH_HASH_THREAD_NICE', flag: 'hash-thread-nice', kind: 'int', defaultValue: '10', min: 0, max: 19, description: 'Nice value of the hash threads (Linux): they yield a core to the event loop and PostgreSQL whenever those need it, and use every cycle left. 0: the same priority as the rest.' },
  { key: 'workers', env: 'TOLLBOOTH_WORKERS', flag: 'workers', kind: 'string', defaultValue: '1', description: 'Processes serving HTTP on one port (node:cluster), sharing one CPU budget: each runs tollbooth\'s pool with max(1, floor(budget / workers)) hash threads. 1: one process (no cluster). `auto` or 0: one per CPU of the budget. Only with the `tollbooth` hash strategy.' },
  { key: 'loginDeadlineMs', env: 'TOLLBOOTH_LOGIN_DEADLINE_MS', flag: 'login-deadline-ms', kind: 'int', defaultValue: '2000', min: 1, max: 600000, description: 'When the answer to a login is due, from its arrival: one not expected to get a hash thread within half the time it has left (a margin for the threads slowing down while it waits) is answered 503 with Retry-After at once.' },
  { key: 'registerDeadlineMs', env: 'TOLLBOOTH_REGISTER_DEADLINE_MS', flag: 'register-deadline-ms', kind: 'int', defaultValue: '5000', min: 1, max: 600000, description: 'The same for registration.' },
  { key: 'jwtSecret', env: 'TOLLBOOTH_JWT_SECRET', flag: 'jwt-secret', kind: 'string', secret: true, defaultValue: undefined, description: 'HMAC key for access tokens with TOLLBOOTH_JWT_ALGORITHM=HS256 (at least 32 characters); the other algorithms do not use it. Unset with HS256: generated once and kept in the data folder with the embedded database, refused with DATABASE_URL.' },
  { key: 'jwtAlgorithm', env: 'TOLLBOOTH_JWT_ALGORITHM', flag: 'jwt-algorithm', kind: 'enum', choices: ['EdDSA', 'ES256', 'HS256'], defaultValue: 'EdDSA', description: 'How access tokens are signed. EdDSA (Ed25519) or ES256 (P-256): a private key shared by every replica, its public key published at /.well-known/jwks.json so other services verify tokens alone. HS256: the shared secret TOLLBOOTH_JWT_SECRET (the JWK Set is then empty).' },
  { key: 'keyEncryptionKey', env: 'TOLLBOOTH_KEY_ENCRYPTION_KEY', flag: 'key-encryption-key', kind: 'string', secret: true, defaultValue: undefined, description: 'Seals the private signing keys kept in PostgreSQL (AES-256-GCM): 32 random bytes as base64 or 64 hex digits (openssl rand -base64 32), the same for every replica. Unset with the embedded database: generated once into the data folder (mode 600, logged); unset with DATABASE_URL (and no key file): refused.' },
  { key: 'signingKeyFile', env: 'TOLLBOOTH_SIGNING_KEY_FILE', flag: 'signing-key-file', kind: 'string', defaultValue: undefined, description: 'A PEM private key (PKCS#8, Ed25519 or P-256, matching TOLLBOOTH_JWT_ALGORITHM) that signs access tokens, instead of keys kept in PostgreSQL. Nothing is stored or rotated; the key id is its JWK thumbprint.' },
  { key: 'verificationKeyFiles', env: 'TOLLBOOTH_VERIFICATION_KEY_FILES', flag: 'verification-key-files', kind: 'string', defaultValue: undefined, description: 'With TOLLBOOTH_SIGNING_KEY_FILE: comma-separated PEM keys (private or public) that no longer sign but still verify and are published, until their last token has expired.' },
  { key: 'signingKeyRotationSeconds', env: 'TOLLBOOTH_SIGNING_KEY_ROTATION_SECONDS', flag: 'signing-key-rotation-seconds', kind: 'int', defaultValue: '2592000', min: 0, max: 315360000, description: 'Age at which a key in PostgreSQL is replaced (30 days): a new key is created and published at once and signs a reload interval plus the JWK Set cache lifetime later; the old one verifies until its last token expires. 0: only when its algorithm changes or it is retired.' },
  { key: 'signingKeyReloadSeconds', env: 'TOLLBOOTH_SIGNING_KEY_RELOAD_SECONDS', flag: 'signing-key-reload-seconds', kind: 'int', defaultValue: '60', min: 1, max: 3600, description: 'How often each replica re-reads the signing keys from PostgreSQL (and creates the next one when due); a token naming an unknown key also triggers a read, at most once a second.' },
  { key: 'jwksMaxAgeSeconds', env: 'TOLLBOOTH_JWKS_MAX_AGE_SECONDS', flag: 'jwks-max-age-seconds', kind: 'int', defaultValue: '300', min: 0, max: 86400, description: 'Cache-Control max-age of /.well-known/jwks.json. A new key is published this long (plus a reload interval) before it signs.' },
  { key: 'accessTokenTtlSeconds', env: 'TOLLBOOTH_ACCESS_TOKEN_TTL_SECONDS', flag: 'access-token-ttl-seconds', kind: 'int', defaultValue: '900', min: 10, max: 86400, description: 'Lifetime of an access token.' },
  { key: 'refreshTokenTtlSeconds', env: 'TOLLBOOTH_REFRESH_TOKEN_TTL_SECONDS', flag: 'refresh-token-ttl-seconds', kind: 'int', defaultValue: '2592000', min: 60, max: 31536000, description: 'Lifetime of a refresh token (30 days).' },
  { key: 'bodyLimitBytes', env: 'TOLLBOOTH_BODY_LIMIT_BYTES', flag: 'body-limit-bytes', kind: 'int', defaultValue: '16384', min: 1024, max: 10485760, description: 'Largest accepted request body; larger ones get 413.' },
  { key: 'logLevel', env: 'TOLLBOOTH_LOG_LEVEL', flag: 'log-level', kind: 'enum', choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], defaultValue: 'info', description: 'pino log level.' },
  { key: 'adminPort', env: 'TOLLBOOTH_ADMIN_PORT', flag: 'admin-port', kind: 'int', defaultValue: undefined, min: 0, max: 65535, description: 'A second listener for operations, as Keycloak\'s management port: /metrics and the readiness details (the hash pool\'s figures) are served there only, and the API port keeps /healthz and a bare /readyz (status only) and answers 404 for /metrics. Unset: everything on the API port.' },
  { key: 'adminHost', env: 'TOLLBOOTH_ADMIN_HOST', flag: 'admin-host', kind: 'string', defaultValue: '127.0.0.1', description: 'Address the admin listener (TOLLBOOTH_ADMIN_PORT) listens on; loopback unless a scraper elsewhere needs it.' },
  { key: 'labDiagnostics', env: 'TOLLBOOTH_LAB_DIAGNOSTICS', flag: 'lab-diagnostics', kind: 'bool', defaultValue: 'false', description: 'Expose the load lab\'s diagnostic login variants under /api/v1/lab (never in production). Refused unless HOST is a loopback address: two variants hand out tokens without a password.' },
  { key: 'readyFile', env: 'TOLLBOOTH_READY_FILE', flag: 'ready-file', kind: 'string', defaultValue: undefined, description: 'Once the service listens, it writes {"url", "pid", "version", "strategy"} as JSON to this file (renamed into place, so never half-written), for programs that start it (docs/reference/launcher.md). Unset: no file.' },
  { key: 'loginThrottleAccountFailures', env: 'TOLLBOOTH_LOGIN_THROTTLE_ACCOUNT_FAILURES', flag: 'login-throttle-account-failures', kind: 'int', defaultValue: '5', min: 1, max: 1000000, description: 'Failed logins one account (email, known or not) may have in a window before each further login, the right password included, waits (429 TOO_MANY_ATTEMPTS).' },
  { key: 'loginThrottleAddressFailures', env: 'TOLLBOOTH_LOGIN_THROTTLE_ADDRESS_FAILURES', flag: 'login-throttle-address-failures', kind: 'int', defaultValue: '100', min: 1, max: 1000000, description: 'The same for one client address (IPv6 by /64), over all accounts.' },
  { key: 'loginThrottleWindowSeconds', env: 'TOLLBOOTH_LOGIN_THROTTLE_WINDOW_SECONDS', flag: 'login-throttle-window-seconds', kind: 'int', defaultValue: '900', min: 1, max: 604800, description: 'The counting window, from a key\'s first failure; when it ends the count starts again from zero.' },
  { key: 'loginThrottleBaseDelaySeconds', env: 'TOLLBOOTH_LOGIN_THROTTLE_BASE_DELAY_SECONDS', flag: 'login-throttle-base-delay-seconds', kind: 'int', defaultValue: '1', min: 1, max: 604800, description: 'The wait after the last free failure, doubled by each further failure.' },
  { key: 'loginThrottleMaxDelaySeconds', env: 'TOLLBOOTH_LOGIN_THROTTLE_MAX_DELAY_SECONDS', flag: 'login-throttle-max-delay-seconds', kind: 'int', defaultValue: '900', min: 1, max: 604800, description: 'The longest wait; at most the window.' },
  { key: 'maxInFlight', env: 'TOLLBOOTH_MAX_IN_FLIGHT', flag: 'max-in-flight', kind: 'int', defaultValue: '128', min: 0, max: 1000000, description: 'API requests in flight at once (the hash routes, with their own admission, are counted apart); the next one is answered 503 SERVICE_OVERLOADED with Retry-After at once. 0: no cap.' },
  { key: 'maxEventLoopDelayMs', env: 'TOLLBOOTH_MAX_EVENT_LOOP_DELAY_MS', flag: 'max-event-loop-delay-ms', kind: 'int', defaultValue: '100', min: 0, max: 60000, description: 'Mean event-loop delay over a sample interval past which every API request is answered 503 SERVICE_OVERLOADED until the next sample. 0: not checked.' },
  { key: 'maxEventLoopUtilizationPercent', env: 'TOLLBOOTH_MAX_EVENT_LOOP_UTILIZATION_PERCENT', flag: 'max-event-loop-utilization-percent', kind: 'int', defaultValue: '0', min: 0, max: 100, description: 'The same on event-loop utilisation, in percent. 0: not checked.' },
  { key: 'pressureSampleIntervalMs', env: 'TOLLBOOTH_PRESSURE_SAMPLE_INTERVAL_MS', flag: 'pressure-sample-interval-ms', kind: 'int', defaultValue: '1000', min: 10, max: 60000, description: 'How often the event loop is sampled for load shedding.' },
  { key: 'listenBacklog', env: 'TOLLBOOTH_LISTEN_BACKLOG', flag: 'listen-backlog', kind: 'int', defaultValue: '4096', min: 1, max: 65535, description: 'Connections the kernel may queue before the service accepts them (the listen backlog; Linux caps it at net.core.somaxconn).' },
  { key: 'acceptors', env: 'TOLLBOOTH_ACCEPTORS', flag: 'acceptors', kind: 'int', defaultValue: '16', min: 1, max: 64, description: 'Listening descriptors for the one socket, each accepting one new connection per turn of the event loop (Node 20 accepts one per turn per descriptor): more let a crowd of new connections in faster when the loop is busy. The copies come from a helper process at start; when it cannot run, the start logs a warning and accepts with one. 1: the server\'s own only.' },
  { key: 'maxConnections', env: 'TOLLBOOTH_MAX_CONNECTIONS', flag: 'max-connections', kind: 'int', defaultValue: '10000', min: 0, max: 1000000, description: 'Open client connections at most; one more is closed at once. The start warns when the file-descriptor limit cannot hold this many. 0: no cap.' },
  { key: 'trustProxy', env: 'TOLLBOOTH_TRUST_PROXY', flag: 'trust-proxy', kind: 'string', defaultValue: 'false', description: 'Which proxies\' X-Forwarded-For gives the client address: false (the peer is the client), true (any), a hop count, or a comma-separated list of addresses and CIDRs.' },
  { key: 'shutdownDrainMs', env: 'TOLLBOOTH_SHUTDOWN_DRAIN_MS', flag: 'shutdown-drain-ms', kind: 'int', defaultValue: '5000', min: 0, max: 600000, description: 'On SIGTERM, how long /readyz answers 503 while every other request is still served, so a load balancer stops sending traffic here before the listener closes; then the service stops accepting, finishes the requests in flight and exits. 0: close at once. SIGINT (Ctrl-C) does not drain.' },
  { key: 'smtpUrl', env: 'TOLLBOOTH_SMTP_URL', flag: 'smtp-url', kind: 'string', secret: true, defaultValue: undefined, description: 'SMTP server that sends the account mails (smtp://host:port, smtps://, with user:password@ if it needs them; a secret, never logged). Unset: mail is not sent but written to the log (its link only as TOLLBOOTH_MAIL_LOG_LINKS says).' },
  { key: 'mailLogLinks', env: 'TOLLBOOTH_MAIL_LOG_LINKS', flag: 'mail-log-links', kind: 'bool', defaultValue: undefined, description: 'Without TOLLBOOTH_SMTP_URL: whether a mail written to the log carries its text, the verification or reset link included (and stays readable in the outbox). Unset: true with the embedded database (development), false with DATABASE_URL, where a link in the log would let whoever reads the logs take over the account: the log then names the mail (id, kind, recipient) and its text is dropped.' },
  { key: 'publicUrl', env: 'TOLLBOOTH_PUBLIC_URL', flag: 'public-url', kind: 'string', defaultValue: undefined, description: 'Base URL of the links in mails (<base>/verify-email?token=..., <base>/reset-password?token=...): the application page that posts the token to the API. Unset: http://HOST:PORT.' },
  { key: 'mailFrom', env: 'TOLLBOOTH_MAIL_FROM', flag: 'mail-from', kind: 'string', defaultValue: 'tollbooth <no-reply@localhost>', description: 'Sender (From) of the mails.' },
  { key: 'mailMaxAttempts', env: 'TOLLBOOTH_MAIL_MAX_ATTEMPTS', flag: 'mail-max-attempts', kind: 'int', defaultValue: '8', min: 1, max: 100, description: 'Send attempts of one mail before it is given up (logged at error, kept in the outbox as failed).' },
  { key: 'mailRetryDelayMs', env: 'TOLLBOOTH_MAIL_RETRY_DELAY_MS', flag: 'mail-retry-delay-ms', kind: 'int', defaultValue: '30000', min: 10, max: 3600000, description: 'Wait before the first retry of a failed send, doubled per attempt, at most an hour.' },
  { key: 'mailPollIntervalMs', env: 'TOLLBOOTH_MAIL_POLL_INTERVAL_MS', flag: 'mail-poll-interval-ms', kind: 'int', defaultValue: '10000', min: 50, max: 600000, description: 'How often each replica looks in the outbox for mail it did not queue itself (retries, a stopped replica\'s); mail a request queues is sent at once.' },
  { key: 'passwordResetTtlSeconds', env: 'TOLLBOOTH_PASSWORD_RESET_TTL_SECONDS', flag: 'password-reset-ttl-seconds', kind: 'int', defaultValue: '3600', min: 60, max: 86400, description: 'Lifetime of a password-reset link.' },
  { key: 'emailVerificationTtlSeconds', env: 'TOLLBOOTH_EMAIL_VERIFICATION_TTL_SECONDS', flag: 'email-verification-ttl-seconds', kind: 'int', defaultValue: '86400', min: 60, max: 2592000, description: 'Lifetime of an email-verification link.' },
  { key: 'mailThrottleAccountRequests', env: 'TOLLBOOTH_MAIL_THROTTLE_ACCOUNT_REQUESTS', flag: 'mail-throttle-account-requests', kind: 'int', defaultValue: '3', min: 1, max: 1000000, description: 'Mails one address (known or not) may be sent per window by password-reset, verification-again and enumeration-safe registration requests; past it the request is still answered 202 and sends nothing.' },
  { key: 'mailThrottleAddressRequests', env: 'TOLLBOOTH_MAIL_THROTTLE_ADDRESS_REQUESTS', flag: 'mail-throttle-address-requests', kind: 'int', defaultValue: '30', min: 1, max: 1000000, description: 'Password-reset and verification-again requests one client address (IPv6 by /64) may make per window; past it: 429 TOO_MANY_ATTEMPTS with Retry-After.' },
  { key: 'mailThrottleWindowSeconds', env: 'TOLLBOOTH_MAIL_THROTTLE_WINDOW_SECONDS', flag: 'mail-throttle-window-seconds', kind: 'int', defaultValue: '3600', min: 1, max: 604800, description: 'The counting window of both mail bounds, from a key\'s first request.' },
  { key: 'requireVerifiedEmail', env: 'TOLLBOOTH_REQUIRE_VERIFIED_EMAIL', flag: 'require-verified-email', kind: 'bool', defaultValue: 'false', description: 'Login of an account whose address is not verified is refused (403 EMAIL_NOT_VERIFIED), after the password matched; so is the refresh of its sessions.' },
  { key: 'registrationMode', env: 'TOLLBOOTH_REGISTRATION_MODE', flag: 'registration-mode', kind: 'enum', choices: ['immediate', 'enumeration-safe'], defaultValue: 'immediate', description: 'immediate: 201 with tokens, 409 for a taken address. enumeration-safe: 202 with the same body whether or not the address is taken; the new address gets the verification mail, a taken one\'s owner a notice; logins then need a verified address, and an unverified account\'s right password is answered as a wrong one.' },
  { key: 'sessionMaxLifetimeSeconds', env: 'TOLLBOOTH_SESSION_MAX_LIFETIME_SECONDS', flag: 'session-max-lifetime-seconds', kind: 'int', defaultValue: '7776000', min: 60, max: 315360000, description: 'Absolute lifetime of a session (90 days), from the login or registration that opened it: refreshing never extends it past this (a refresh token expires at the earlier of its own lifetime and its session\'s end); then the user signs in again.' },
  { key: 'refreshGraceSeconds', env: 'TOLLBOOTH_REFRESH_GRACE_SECONDS', flag: 'refresh-grace-seconds', kind: 'int', defaultValue: '5', min: 0, max: 300, description: 'A refresh token presented again this long after it was rotated (a retry, a second tab) gets the same successor instead of counting as reuse; later, reuse revokes the session. 0: any second use is reuse.' },
  { key: 'sessionCheckCacheMs', env: 'TOLLBOOTH_SESSION_CHECK_CACHE_MS', flag: 'session-check-cache-ms', kind: 'int', defaultValue: '1000', min: 0, max: 60000, description: 'How long each process remembers that an access token\'s session is live (one query per session and period): a session revoked through another replica is refused here within this time at most; one revoked through this process at once. 0: a query on every authenticated request.' },
  { key: 'purgeIntervalSeconds', env: 'TOLLBOOTH_PURGE_INTERVAL_SECONDS', flag: 'purge-interval-seconds', kind: 'int', defaultValue: '3600', min: 0, max: 604800, description: 'How often each replica deletes expired, rotated-and-expired and revoked refresh tokens, ended sessions, spent or expired reset and verification links, and mail rows finished a week ago (first run one interval after the start). Replicas running it together share the work. 0: never.' },
  { key: 'purgeBatchSize', env: 'TOLLBOOTH_PURGE_BATCH_SIZE', flag: 'purge-batch-size', kind: 'int', defaultValue: '1000', min: 1, max: 100000, description: 'Rows the purge job deletes per statement (each its own short transaction), so it never holds many locks for long.' },
]

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

/** Parses flags (which win over env) and env into a validated Config; throws CONFIG_INVALID. */
export function loadConfig ({ env = process.env, argv = [], overrides = {} }: LoadConfigInput = {}): Config {
  const options: Record<string, { type: 'string' | 'boolean' }> = {}
  for (const setting of settings) options[setting.flag] = { type: setting.kind === 'bool' ? 'boolean' : 'string' }
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false })
  } catch (err) {
    throw createError('CONFIG_INVALID', (err as Error).message)
  }

  const flat: Record<string, unknown> = {}
  for (const setting of settings) {
    const fromFlag = parsed.values[setting.flag]
    if (setting.secret === true && fromFlag !== undefined) throw secretFlagRefused(setting)
    const fromEnv = setting.secret === true ? secretFromEnvironment(setting, env) : env[setting.env]
    if (fromFlag !== undefined) {
      flat[setting.key] = parseValue(setting, String(fromFlag), 'flag')
    } else if (fromEnv !== undefined && fromEnv !== '') {
      flat[setting.key] = parseValue(setting, fromEnv, 'environment variable')
    } else if (setting.defaultValue !== undefined) {
      flat[setting.key] = parseValue(setting, setting.defaultValue, 'default')
    }
  }
  Object.assign(flat, overrides)
  // Its default depends on where the database is: a link in a deployment's log is a leaked secret.
  flat.mailLogLinks ??= flat.databaseUrl === undefined
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
  }
  checkTokenSettings(c)
  if (c.labDiagnostics && !isLoopbackHost(c.host)) {
    throw createError('CONFIG_INVALID', `TOLLBOOTH_LAB_DIAGNOSTICS needs the service on a loopback address (HOST 127.0.0.1, ::1 or localhost), not ${c.host}: its diagnostic logins hand out tokens without a password`, { field: 'TOLLBOOTH_LAB_DIAGNOSTICS' })
  }
  if (c.adminPort !== undefined && c.adminPort !== 0 && c.adminPort === c.port) {
    throw createError('CONFIG_INVALID', `TOLLBOOTH_ADMIN_PORT must differ from PORT (${c.port}): the admin listener is a second one`, { field: 'TOLLBOOTH_ADMIN_PORT' })
  }
  checkMailSettings(c)

  c.trustProxy = parseTrustProxy(c.trustProxy)
  c.workers = parseWorkers(c.workers)
  if (c.workers !== 1 && c.hashStrategy !== 'tollbooth') {
    throw createError('CONFIG_INVALID', `TOLLBOOTH_WORKERS / --workers needs the tollbooth hash strategy, not ${c.hashStrategy} (the cluster strategy forks its own workers)`, { field: 'TOLLBOOTH_WORKERS' })
  }
  if (c.loginThrottleMaxDelaySeconds > c.loginThrottleWindowSeconds) {
    throw createError('CONFIG_INVALID', `TOLLBOOTH_LOGIN_THROTTLE_MAX_DELAY_SECONDS (${c.loginThrottleMaxDelaySeconds}) must not exceed TOLLBOOTH_LOGIN_THROTTLE_WINDOW_SECONDS (${c.loginThrottleWindowSeconds}): a wait never outlasts the window it counts in`)
  }

  const { hashAlgorithm, bcryptCost, argon2MemoryKiB, argon2TimeCost, argon2Parallelism, scryptN, scryptR, scryptP, ...rest } = c
  const hashPolicy: HashPolicy = {
    algorithm: hashAlgorithm,
    argon2: { memoryKiB: argon2MemoryKiB, timeCost: argon2TimeCost, parallelism: argon2Parallelism },
    bcrypt: { cost: bcryptCost },
    scrypt: { N: scryptN, r: scryptR, p: scryptP },
  }
  checkPolicy(hashPolicy)
  return { ...rest, dataDir: path.resolve(c.dataDir), hashPolicy }
}

function secretFlagRefused (setting: Setting): Error {
  return createError('CONFIG_INVALID', `--${setting.flag} is refused: a secret on the command line is visible to every user of the machine (ps, /proc). Set ${setting.env} in the environment, or ${setting.env}_FILE to a file that holds it`, { field: setting.env })
}

/**
 * One secret for a command other than `serve` (`tollbooth migrate`): from its variable or its
 * _FILE, and its flag, when given, refused just as `serve` refuses it.
 */
export function readSecret (envName: string, env: NodeJS.ProcessEnv, flagValue?: string): string | undefined {
  const setting = settings.find((s) => s.env === envName && s.secret === true)
  if (setting === undefined) throw new TypeError(`${envName} is not a secret setting`)
  if (flagValue !== undefined) throw secretFlagRefused(setting)
  const value = secretFromEnvironment(setting, env)
  return value === '' ? undefined : value
}

/**
 * A secret setting's value: its environment variable, or the content of the file `<env>_FILE`
 * names (read once, here; one trailing newline dropped, as `echo` and editors leave one).
 */
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

/** 127.0.0.0/8, ::1 (also as ::ffff:127.x) or the name localhost: reachable from this machine alone. */
export function isLoopbackHost (host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  if (bare === 'localhost') return true
  if (net.isIPv4(bare)) return bare.startsWith('127.')
  if (net.isIPv6(bare)) {
    if (bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare)?.[1]
    return mapped !== undefined && mapped.startsWith('127.')
  }
  return false
}

/** The token settings that only make sense together (the key material itself is read at start). */
function checkTokenSettings (c: FlatConfig): void {
  if (c.keyEncryptionKey !== undefined) parseKeyEncryptionKey(c.keyEncryptionKey, 'TOLLBOOTH_KEY_ENCRYPTION_KEY')
  if (c.jwtAlgorithm === 'HS256' && c.signingKeyFile !== undefined) {
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_SIGNING_KEY_FILE needs TOLLBOOTH_JWT_ALGORITHM EdDSA or ES256, not HS256', { field: 'TOLLBOOTH_SIGNING_KEY_FILE' })
  }
  if (c.verificationKeyFiles !== undefined && c.signingKeyFile === undefined) {
    throw createError('CONFIG_INVALID', 'TOLLBOOTH_VERIFICATION_KEY_FILES needs TOLLBOOTH_SIGNING_KEY_FILE', { field: 'TOLLBOOTH_VERIFICATION_KEY_FILES' })
  }
}

/** The mail settings' URLs, checked at start rather than at the first mail. */
function checkMailSettings (c: FlatConfig): void {
  const check = (value: string | undefined, env: string, protocols: string[]): void => {
    if (value === undefined) return
    let protocol: string
    try {
      protocol = new URL(value).protocol
    } catch {
      throw createError('CONFIG_INVALID', `${env} must be a URL (${protocols.join(' or ')})`, { field: env })
    }
    if (!protocols.includes(protocol)) throw createError('CONFIG_INVALID', `${env} must be a ${protocols.join(' or ')} URL`, { field: env })
  }
  check(c.smtpUrl, 'TOLLBOOTH_SMTP_URL', ['smtp:', 'smtps:'])
  check(c.publicUrl, 'TOLLBOOTH_PUBLIC_URL', ['http:', 'https:'])
}

/** Most worker processes `--workers` starts (each holds a database pool and at least one hash thread). */
export const maxWorkers = 256

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

/**
 * The engine's own policy check, at load time: combinations each range allows alone (scrypt
 * N=2^20 at r=8 is 1 GiB a verify) stop the start here, before PostgreSQL is started.
 */
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

export function configHelp (): string {
  const lines = settings.map((s) => {
    const def = s.defaultValue === undefined ? '' : ` (default ${s.defaultValue})`
    const choices = s.choices === undefined ? '' : ` [${s.choices.join(' | ')}]`
    if (s.secret === true) return `  ${'(secret: no flag)'.padEnd(28)} ${s.env} or ${s.env}_FILE\n      ${s.description}`
    return `  --${s.flag.padEnd(26)} ${s.env}${choices}${def}\n      ${s.description}`
  })
  return lines.join('\n')
}
