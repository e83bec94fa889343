/**
 * Every setting, declared once: its variable, its flag, its kind, default and range, its tier.
 * docs/reference/config.md documents each one (a test keeps the two in step).
 */
import { hashAlgorithms, type HashAlgorithm, type HashPolicy } from '../hashing/index.js'

const databaseStatementKinds = ['named', 'unnamed'] as const
type DatabaseStatements = typeof databaseStatementKinds[number]

/** The hash settings arrive flat (one variable each) and leave grouped as a HashPolicy. */
type FlatHashSettings = 'hashAlgorithm' | 'bcryptCost' | 'argon2MemoryKiB' | 'argon2TimeCost' | 'argon2Parallelism' | 'scryptN' | 'scryptR' | 'scryptP' | 'hashMemoryBudget'

export type Config = Omit<FlatConfig, FlatHashSettings | 'databasePoolSize'> & {
  /** TOLLBOOTH_DB_POOL_SIZE, or the default for where the database runs (database-pool.ts). */
  databasePoolSize: number
  hashPolicy: HashPolicy
  /** What one process's hash threads may hold together (TOLLBOOTH_HASH_MEMORY_BUDGET resolved, split between `--workers`). */
  hashMemoryBudgetBytes: number
  /** The `tollbooth calibrate --write` file whose settings are the hash defaults here; undefined: none. */
  hashCalibrationFile: string | undefined
}

type Kind = 'string' | 'int' | 'bool' | 'enum'

/** `operator`: what a deployment sets (config.md's first table); `tuning`: what the defaults already get right. */
type SettingTier = 'operator' | 'tuning'

export interface Setting {
  key: keyof FlatConfig
  tier: SettingTier
  env: string
  flag: string
  kind: Kind
  defaultValue: string | undefined
  description: string
  min?: number
  max?: number
  choices?: readonly string[]
  /**
   * A secret: from the variable or the file `<env>_FILE` names, never from a flag, which every user
   * of the machine can read (ps); `flag` is kept only to refuse it with where the value goes.
   */
  secret?: true
}

/** The config as flat settings, one per variable, before grouping into `Config`. */
export interface FlatConfig {
  host: string
  port: number
  /** Undefined: start the embedded PostgreSQL in `dataDir`. */
  databaseUrl: string | undefined
  dataDir: string
  /** Undefined: two per CPU when the database shares the machine, 10 otherwise (database-pool.ts). */
  databasePoolSize: number | undefined
  /** The deadline on getting a pooled connection (waiting or connecting). */
  databaseAcquireTimeoutMs: number
  /** `named`: queries with parameters go as named prepared statements (db/prepared-client.ts). */
  databaseStatements: DatabaseStatements
  hashAlgorithm: HashAlgorithm
  bcryptCost: number
  argon2MemoryKiB: number
  argon2TimeCost: number
  argon2Parallelism: number
  scryptN: number
  scryptR: number
  scryptP: number
  /** Undefined: size the pool to the CPU budget. */
  hashThreads: number | undefined
  hashMaxQueue: number | undefined
  hashThreadNice: number
  /** TOLLBOOTH_HASH_MEMORY_BUDGET as given: a share of the memory limit (`50%`) or a size (`512MiB`). */
  hashMemoryBudget: string
  /** `auto`: where glibc takes its malloc settings for hashing and they are missing, they are added (machine/malloc-env.ts); `off`: the environment as given. */
  mallocSettings: 'auto' | 'off'
  /** `serve --workers`: processes on one port sharing the CPU budget (process/cluster.ts); 0: one per CPU. 1: one process. */
  workers: number
  loginDeadlineMs: number
  registerDeadlineMs: number
  /** Undefined in embedded mode: generated once and kept in the data folder. */
  jwtSecret: string | undefined
  /** How access tokens are signed: an asymmetric key from the key ring (keys/), or the HMAC secret. */
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
  loginThrottleAccountFailures: number
  loginThrottleAddressFailures: number
  loginThrottleWindowSeconds: number
  loginThrottleBaseDelaySeconds: number
  loginThrottleMaxDelaySeconds: number
  loginThrottleDeviceFailures: number
  /** Each account that signed in from an address in the window adds this many free failures to the address's bound. */
  loginThrottleAddressFailuresPerAccount: number
  deviceTtlDays: number
  registerThrottleClientRequests: number
  registerThrottleAccountRequests: number
  registerThrottleWindowSeconds: number
  /** Fastify's `trustProxy`: which hops' X-Forwarded-For to believe for the client address. */
  trustProxy: TrustProxy
  /** Load shedding of the API routes (overload/shedding.ts); 0 turns a check off. */
  maxInFlight: number
  maxEventLoopDelayMs: number
  maxEventLoopUtilizationPercent: number
  pressureSampleIntervalMs: number
  /** Connections the kernel may queue for accept (capped by net.core.somaxconn). */
  listenBacklog: number
  /** Open connections at most; 0: no cap. Also what the file-descriptor check at start plans for. */
  maxConnections: number
  /** Listening descriptors for the service's socket (process/acceptors.ts). */
  acceptors: number
  /** On SIGTERM: how long /readyz answers 503 while everything else is still served (overload/drain.ts). */
  shutdownDrainMs: number
  /** Mail (mail/): undefined SMTP URL: mail is written to the log. The URL may hold a password. */
  smtpUrl: string | undefined
  /** smtp:// to a loopback server without STARTTLS (development, tests); refused with NODE_ENV=production. */
  smtpAllowPlaintextLoopback: boolean
  /** Without SMTP: whether a logged mail carries its link (at debug level). Unset: yes on the embedded database, no with DATABASE_URL. */
  mailLogLinks: boolean
  /** Base of the links in mails: required with DATABASE_URL; loadConfig fills in http://<host>:<port> on the embedded database. */
  publicUrl: string | undefined
  /** The passkeys' relying party (config/relying-party.ts resolves the defaults from publicUrl). */
  passkeyRpId: string | undefined
  passkeyRpName: string
  /** Comma-separated origins whose pages may use the passkeys. */
  passkeyOrigins: string | undefined
  passkeyChallengeTtlSeconds: number
  /** GET /account, the page to try registration, passkeys and TOTP. Unset: on with the embedded database (development), off with DATABASE_URL. */
  accountPage: boolean
  /** The OpenID Connect provider at <publicUrl>/oidc (oidc/). */
  oidc: boolean
  oidcAccessTokenTtlSeconds: number
  oidcInteractionTtlSeconds: number
  /** A JSON file of relying parties applied at start (oidc/clients-file.ts); undefined: none. */
  oidcClientsFile: string | undefined
  /** Dynamic client registration (RFC 7591): off, with the initial access token, or open to anyone. */
  oidcRegistration: 'off' | 'token' | 'open'
  oidcRegistrationToken: string | undefined
  mailFrom: string
  mailMaxAttempts: number
  mailRetryDelayMs: number
  mailPollIntervalMs: number
  passwordResetTtlSeconds: number
  emailVerificationTtlSeconds: number
  mailThrottleAccountRequests: number
  mailThrottleAddressRequests: number
  mailThrottleMailboxMails: number
  mailThrottleWindowSeconds: number
  requireVerifiedEmail: boolean
  registrationMode: 'immediate' | 'enumeration-safe'
  secondFactor: 'allowed' | 'required' | 'off'
  /** A session's absolute lifetime from its sign-in: no refresh token of it outlives this. */
  sessionMaxLifetimeSeconds: number
  /** How long a rotated refresh token still gets its successor again (a retry, a second tab) instead of counting as reuse. */
  refreshGraceSeconds: number
  /** How long a "session is live" answer is remembered per process (accounts/session-check.ts). */
  sessionCheckCacheMs: number
  /** The purge job (accounts/purge-job.ts): how often it runs (0: never), and rows per statement. */
  purgeIntervalSeconds: number
  purgeBatchSize: number
}

/** false: the socket's peer is the client; true: every hop; a number: that many hops; a list: those proxies. */
export type TrustProxy = boolean | number | string[]

export const settings: readonly Setting[] = [
  { key: 'host', tier: 'operator', env: 'HOST', flag: 'host', kind: 'string', defaultValue: '127.0.0.1', description: 'Address the HTTP server listens on.' },
  { key: 'port', tier: 'operator', env: 'PORT', flag: 'port', kind: 'int', defaultValue: '3000', min: 0, max: 65535, description: 'TCP port of the HTTP server (0 picks a free one).' },
  { key: 'databaseUrl', tier: 'operator', env: 'DATABASE_URL', flag: 'database-url', kind: 'string', secret: true, defaultValue: undefined, description: 'PostgreSQL connection string. Unset: tollbooth starts its embedded PostgreSQL in the data folder.' },
  { key: 'dataDir', tier: 'operator', env: 'TOLLBOOTH_DATA_DIR', flag: 'data-dir', kind: 'string', defaultValue: './.tollbooth', description: 'Folder for the embedded database and the keys made for it (the key-encryption key; with HS256, the JWT secret). Nothing is written there with DATABASE_URL.' },
  { key: 'databasePoolSize', tier: 'tuning', env: 'TOLLBOOTH_DB_POOL_SIZE', flag: 'db-pool-size', kind: 'int', defaultValue: undefined, min: 1, max: 200, description: 'Connections in the PostgreSQL client pool of each process. Unset: two per CPU of the process\'s budget (at least two) when PostgreSQL runs on this machine (embedded, loopback or a Unix socket), where more backends would take the CPU from the event loop; 10 for a database elsewhere.' },
  { key: 'databaseAcquireTimeoutMs', tier: 'tuning', env: 'TOLLBOOTH_DB_ACQUIRE_TIMEOUT_MS', flag: 'db-acquire-timeout-ms', kind: 'int', defaultValue: '1000', min: 10, max: 60000, description: 'How long a request may wait for a database connection (behind busy ones, or connecting a new one) before it is answered 503: SERVICE_OVERLOADED when every connection is busy, DATABASE_UNAVAILABLE when the database does not answer.' },
  { key: 'databaseStatements', tier: 'tuning', env: 'TOLLBOOTH_DB_STATEMENTS', flag: 'db-statements', kind: 'enum', choices: databaseStatementKinds, defaultValue: 'named', description: '`named`: each query with parameters goes as a named prepared statement, parsed and planned once per database connection (about half of PostgreSQL\'s CPU for a cheap request). `unnamed`: parsed and planned at every call, as pg does; for a connection pooler in transaction mode that does not keep named statements (PgBouncer before 1.21, or without max_prepared_statements).' },
  { key: 'hashAlgorithm', tier: 'operator', env: 'TOLLBOOTH_HASH_ALGORITHM', flag: 'hash-algorithm', kind: 'enum', choices: hashAlgorithms, defaultValue: 'argon2id', description: 'Algorithm for new password hashes; stored hashes of the others keep verifying and are re-hashed on login.' },
  { key: 'bcryptCost', tier: 'operator', env: 'TOLLBOOTH_BCRYPT_COST', flag: 'bcrypt-cost', kind: 'int', defaultValue: '10', min: 4, max: 16, description: 'bcrypt cost (log2 rounds).' },
  { key: 'argon2MemoryKiB', tier: 'operator', env: 'TOLLBOOTH_ARGON2_MEMORY_KIB', flag: 'argon2-memory-kib', kind: 'int', defaultValue: '19456', min: 1024, max: 262144, description: 'argon2id memory in KiB (OWASP: 19456).' },
  { key: 'argon2TimeCost', tier: 'operator', env: 'TOLLBOOTH_ARGON2_TIME_COST', flag: 'argon2-time-cost', kind: 'int', defaultValue: '2', min: 1, max: 16, description: 'argon2id iterations (OWASP: 2).' },
  { key: 'argon2Parallelism', tier: 'tuning', env: 'TOLLBOOTH_ARGON2_PARALLELISM', flag: 'argon2-parallelism', kind: 'int', defaultValue: '1', min: 1, max: 16, description: 'argon2id lanes (OWASP: 1).' },
  { key: 'scryptN', tier: 'operator', env: 'TOLLBOOTH_SCRYPT_N', flag: 'scrypt-n', kind: 'int', defaultValue: '32768', min: 1024, max: 1048576, description: 'scrypt CPU/memory cost N, a power of two, with 128·N·r at most 256 MiB (N at most 262144 at r=8).' },
  { key: 'scryptR', tier: 'operator', env: 'TOLLBOOTH_SCRYPT_R', flag: 'scrypt-r', kind: 'int', defaultValue: '8', min: 1, max: 32, description: 'scrypt block size r.' },
  { key: 'scryptP', tier: 'tuning', env: 'TOLLBOOTH_SCRYPT_P', flag: 'scrypt-p', kind: 'int', defaultValue: '1', min: 1, max: 16, description: 'scrypt parallelism p.' },
  { key: 'hashThreads', tier: 'tuning', env: 'TOLLBOOTH_HASH_THREADS', flag: 'hash-threads', kind: 'int', defaultValue: undefined, min: 1, max: 256, description: 'Hash worker threads. Unset: the CPU this process really has (cgroup quota, affinity, cores).' },
  { key: 'hashMaxQueue', tier: 'tuning', env: 'TOLLBOOTH_HASH_MAX_QUEUE', flag: 'hash-max-queue', kind: 'int', defaultValue: undefined, min: 1, max: 1000000, description: 'Hard cap on queued hash requests. Unset: the engine default (64 per thread).' },
  { key: 'hashMemoryBudget', tier: 'tuning', env: 'TOLLBOOTH_HASH_MEMORY_BUDGET', flag: 'hash-memory-budget', kind: 'string', defaultValue: '50%', description: 'What the hash threads may hold together: a share of the process\'s memory limit (the lowest of the cgroup v2 memory.max, the cgroup v1 memory.limit_in_bytes and the machine\'s memory), as 50%, or a size, as 512MiB or 2GiB; `--workers` processes share it. A start where threads × one hash\'s memory (argon2 m KiB, scrypt 128·N·r bytes, bcrypt about 4 KiB) would not fit is refused, with what fits; a stored hash that would hold more than one thread\'s share is refused unrun.' },
  { key: 'hashThreadNice', tier: 'tuning', env: 'TOLLBOOTH_HASH_THREAD_NICE', flag: 'hash-thread-nice', kind: 'int', defaultValue: '10', min: 0, max: 19, description: 'Nice value of the hash threads (Linux): they yield a core to the event loop and PostgreSQL whenever those need it, and use every cycle left. 0: the same priority as the rest.' },
  { key: 'mallocSettings', tier: 'tuning', env: 'TOLLBOOTH_MALLOC_SETTINGS', flag: 'malloc-settings', kind: 'enum', choices: ['auto', 'off'], defaultValue: 'auto', description: '`auto`: on glibc 2.35 or later, where MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ are not set, the `tollbooth` command starts node again with them (same pid), and the workers and services it starts get them, so each hash thread keeps its scrypt buffer between hashes. `off`: node runs with the environment as given.' },
  { key: 'workers', tier: 'operator', env: 'TOLLBOOTH_WORKERS', flag: 'workers', kind: 'string', defaultValue: '1', description: 'Processes serving HTTP on one port (node:cluster), sharing one CPU budget: each runs tollbooth\'s pool with max(1, floor(budget / workers)) hash threads. 1: one process (no cluster). `auto` or 0: one per CPU of the budget.' },
  { key: 'loginDeadlineMs', tier: 'operator', env: 'TOLLBOOTH_LOGIN_DEADLINE_MS', flag: 'login-deadline-ms', kind: 'int', defaultValue: '2000', min: 1, max: 600000, description: 'When the answer to a login is due, from its arrival: one not expected to get a hash thread within half the time it has left (a margin for the threads slowing down while it waits) is answered 503 with Retry-After at once.' },
  { key: 'registerDeadlineMs', tier: 'tuning', env: 'TOLLBOOTH_REGISTER_DEADLINE_MS', flag: 'register-deadline-ms', kind: 'int', defaultValue: '5000', min: 1, max: 600000, description: 'The same for registration.' },
  { key: 'jwtSecret', tier: 'tuning', env: 'TOLLBOOTH_JWT_SECRET', flag: 'jwt-secret', kind: 'string', secret: true, defaultValue: undefined, description: 'HMAC key for access tokens with TOLLBOOTH_JWT_ALGORITHM=HS256 (at least 32 characters); the other algorithms do not use it. Unset with HS256: generated once and kept in the data folder with the embedded database, refused with DATABASE_URL.' },
  { key: 'jwtAlgorithm', tier: 'operator', env: 'TOLLBOOTH_JWT_ALGORITHM', flag: 'jwt-algorithm', kind: 'enum', choices: ['EdDSA', 'ES256', 'HS256'], defaultValue: 'EdDSA', description: 'How access tokens are signed. EdDSA (Ed25519) or ES256 (P-256): a private key shared by every replica, its public key published at /.well-known/jwks.json so other services verify tokens alone. HS256: the shared secret TOLLBOOTH_JWT_SECRET (the JWK Set is then empty).' },
  { key: 'keyEncryptionKey', tier: 'operator', env: 'TOLLBOOTH_KEY_ENCRYPTION_KEY', flag: 'key-encryption-key', kind: 'string', secret: true, defaultValue: undefined, description: 'Seals the private signing keys kept in PostgreSQL (AES-256-GCM): 32 random bytes as base64 or 64 hex digits (openssl rand -base64 32), the same for every replica. Unset with the embedded database: generated once into the data folder (mode 600, logged); unset with DATABASE_URL (and no key file): refused.' },
  { key: 'signingKeyFile', tier: 'operator', env: 'TOLLBOOTH_SIGNING_KEY_FILE', flag: 'signing-key-file', kind: 'string', defaultValue: undefined, description: 'A PEM private key (PKCS#8, Ed25519 or P-256, matching TOLLBOOTH_JWT_ALGORITHM) that signs access tokens, instead of keys kept in PostgreSQL. Nothing is stored or rotated; the key id is its JWK thumbprint.' },
  { key: 'verificationKeyFiles', tier: 'tuning', env: 'TOLLBOOTH_VERIFICATION_KEY_FILES', flag: 'verification-key-files', kind: 'string', defaultValue: undefined, description: 'With TOLLBOOTH_SIGNING_KEY_FILE: comma-separated PEM keys (private or public) that no longer sign but still verify and are published, until their last token has expired.' },
  { key: 'signingKeyRotationSeconds', tier: 'tuning', env: 'TOLLBOOTH_SIGNING_KEY_ROTATION_SECONDS', flag: 'signing-key-rotation-seconds', kind: 'int', defaultValue: '2592000', min: 0, max: 315360000, description: 'Age at which a key in PostgreSQL is replaced (30 days): a new key is created and published at once and signs a reload interval plus the JWK Set cache lifetime later; the old one verifies until its last token expires. 0: only when its algorithm changes or it is retired.' },
  { key: 'signingKeyReloadSeconds', tier: 'tuning', env: 'TOLLBOOTH_SIGNING_KEY_RELOAD_SECONDS', flag: 'signing-key-reload-seconds', kind: 'int', defaultValue: '60', min: 1, max: 3600, description: 'How often each replica re-reads the signing keys from PostgreSQL (and creates the next one when due); a token naming an unknown key also triggers a read, at most once a second.' },
  { key: 'jwksMaxAgeSeconds', tier: 'tuning', env: 'TOLLBOOTH_JWKS_MAX_AGE_SECONDS', flag: 'jwks-max-age-seconds', kind: 'int', defaultValue: '300', min: 0, max: 86400, description: 'Cache-Control max-age of /.well-known/jwks.json. A new key is published this long (plus a reload interval) before it signs.' },
  { key: 'accessTokenTtlSeconds', tier: 'operator', env: 'TOLLBOOTH_ACCESS_TOKEN_TTL_SECONDS', flag: 'access-token-ttl-seconds', kind: 'int', defaultValue: '900', min: 10, max: 86400, description: 'Lifetime of an access token.' },
  { key: 'refreshTokenTtlSeconds', tier: 'operator', env: 'TOLLBOOTH_REFRESH_TOKEN_TTL_SECONDS', flag: 'refresh-token-ttl-seconds', kind: 'int', defaultValue: '2592000', min: 60, max: 31536000, description: 'Lifetime of a refresh token (30 days).' },
  { key: 'bodyLimitBytes', tier: 'tuning', env: 'TOLLBOOTH_BODY_LIMIT_BYTES', flag: 'body-limit-bytes', kind: 'int', defaultValue: '16384', min: 1024, max: 10485760, description: 'Largest accepted request body; larger ones get 413.' },
  { key: 'logLevel', tier: 'operator', env: 'TOLLBOOTH_LOG_LEVEL', flag: 'log-level', kind: 'enum', choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], defaultValue: 'info', description: 'pino log level.' },
  { key: 'adminPort', tier: 'operator', env: 'TOLLBOOTH_ADMIN_PORT', flag: 'admin-port', kind: 'int', defaultValue: undefined, min: 0, max: 65535, description: 'A second listener for operations, as Keycloak\'s management port: /metrics and the readiness details (the hash pool\'s figures) are served there only, and the API port keeps /healthz and a bare /readyz (status only) and answers 404 for /metrics. Unset: everything on the API port.' },
  { key: 'adminHost', tier: 'tuning', env: 'TOLLBOOTH_ADMIN_HOST', flag: 'admin-host', kind: 'string', defaultValue: '127.0.0.1', description: 'Address the admin listener (TOLLBOOTH_ADMIN_PORT) listens on; loopback unless a scraper elsewhere needs it.' },
  { key: 'loginThrottleAccountFailures', tier: 'tuning', env: 'TOLLBOOTH_LOGIN_THROTTLE_ACCOUNT_FAILURES', flag: 'login-throttle-account-failures', kind: 'int', defaultValue: '5', min: 1, max: 1000000, description: 'Failed logins one account (email, known or not) may have in a window before each further login, the right password included, waits (429 TOO_MANY_ATTEMPTS).' },
  { key: 'loginThrottleAddressFailures', tier: 'tuning', env: 'TOLLBOOTH_LOGIN_THROTTLE_ADDRESS_FAILURES', flag: 'login-throttle-address-failures', kind: 'int', defaultValue: '100', min: 1, max: 1000000, description: 'The same for one client address (IPv6 by /64), over all accounts.' },
  { key: 'loginThrottleWindowSeconds', tier: 'tuning', env: 'TOLLBOOTH_LOGIN_THROTTLE_WINDOW_SECONDS', flag: 'login-throttle-window-seconds', kind: 'int', defaultValue: '900', min: 1, max: 604800, description: 'The counting window, from a key\'s first failure; when it ends the count starts again from zero.' },
  { key: 'loginThrottleBaseDelaySeconds', tier: 'tuning', env: 'TOLLBOOTH_LOGIN_THROTTLE_BASE_DELAY_SECONDS', flag: 'login-throttle-base-delay-seconds', kind: 'int', defaultValue: '1', min: 1, max: 604800, description: 'The wait after the last free failure, doubled by each further failure.' },
  { key: 'loginThrottleMaxDelaySeconds', tier: 'tuning', env: 'TOLLBOOTH_LOGIN_THROTTLE_MAX_DELAY_SECONDS', flag: 'login-throttle-max-delay-seconds', kind: 'int', defaultValue: '900', min: 1, max: 604800, description: 'The longest wait; at most the window.' },
  { key: 'loginThrottleDeviceFailures', tier: 'tuning', env: 'TOLLBOOTH_LOGIN_THROTTLE_DEVICE_FAILURES', flag: 'login-throttle-device-failures', kind: 'int', defaultValue: '10', min: 1, max: 1000000, description: 'Failed logins a known device (one that signed in to the account before and presents its device token) may have in a window before its own logins wait. A known device is judged by its own failures alone, never by the account\'s or its address\'s: guesses from elsewhere cannot lock its owner out.' },
  { key: 'loginThrottleAddressFailuresPerAccount', tier: 'tuning', env: 'TOLLBOOTH_LOGIN_THROTTLE_ADDRESS_FAILURES_PER_ACCOUNT', flag: 'login-throttle-address-failures-per-account', kind: 'int', defaultValue: '10', min: 0, max: 1000000, description: 'The address bound grows with the people behind the address: each account that signed in from it in the window adds this many free failures (an office or a carrier\'s NAT), up to ten times TOLLBOOTH_LOGIN_THROTTLE_ADDRESS_FAILURES.' },
  { key: 'deviceTtlDays', tier: 'tuning', env: 'TOLLBOOTH_DEVICE_TTL_DAYS', flag: 'device-ttl-days', kind: 'int', defaultValue: '365', min: 1, max: 3650, description: 'Lifetime of a device token (the cookie `tollbooth_device`, or the header `Tollbooth-Device` for API clients), renewed at each sign-in from the device.' },
  { key: 'registerThrottleClientRequests', tier: 'tuning', env: 'TOLLBOOTH_REGISTER_THROTTLE_CLIENT_REQUESTS', flag: 'register-throttle-client-requests', kind: 'int', defaultValue: '100', min: 1, max: 1000000, description: 'Registrations one client address (IPv6 by /64) may send in a window; past it, 429 TOO_MANY_ATTEMPTS with Retry-After, before any hash. The OpenID Connect provider\'s dynamic client registrations are bounded by it too, counted apart.' },
  { key: 'registerThrottleAccountRequests', tier: 'tuning', env: 'TOLLBOOTH_REGISTER_THROTTLE_ACCOUNT_REQUESTS', flag: 'register-throttle-account-requests', kind: 'int', defaultValue: '5', min: 1, max: 1000000, description: 'Registrations of one mailbox (the email with case, +tags and dots folded, taken or not) in a window; past it, the same 429.' },
  { key: 'registerThrottleWindowSeconds', tier: 'tuning', env: 'TOLLBOOTH_REGISTER_THROTTLE_WINDOW_SECONDS', flag: 'register-throttle-window-seconds', kind: 'int', defaultValue: '3600', min: 1, max: 604800, description: 'The counting window of both registration bounds, from a key\'s first registration.' },
  { key: 'maxInFlight', tier: 'tuning', env: 'TOLLBOOTH_MAX_IN_FLIGHT', flag: 'max-in-flight', kind: 'int', defaultValue: '128', min: 0, max: 1000000, description: 'API requests in flight at once (the hash routes, with their own admission, are counted apart); the next one is answered 503 SERVICE_OVERLOADED with Retry-After at once. 0: no cap.' },
  { key: 'maxEventLoopDelayMs', tier: 'tuning', env: 'TOLLBOOTH_MAX_EVENT_LOOP_DELAY_MS', flag: 'max-event-loop-delay-ms', kind: 'int', defaultValue: '100', min: 0, max: 60000, description: 'Mean event-loop delay over a sample interval past which every API request is answered 503 SERVICE_OVERLOADED until the next sample. 0: not checked.' },
  { key: 'maxEventLoopUtilizationPercent', tier: 'tuning', env: 'TOLLBOOTH_MAX_EVENT_LOOP_UTILIZATION_PERCENT', flag: 'max-event-loop-utilization-percent', kind: 'int', defaultValue: '0', min: 0, max: 100, description: 'The same on event-loop utilisation, in percent. 0: not checked.' },
  { key: 'pressureSampleIntervalMs', tier: 'tuning', env: 'TOLLBOOTH_PRESSURE_SAMPLE_INTERVAL_MS', flag: 'pressure-sample-interval-ms', kind: 'int', defaultValue: '1000', min: 10, max: 60000, description: 'How often the event loop is sampled for load shedding.' },
  { key: 'listenBacklog', tier: 'tuning', env: 'TOLLBOOTH_LISTEN_BACKLOG', flag: 'listen-backlog', kind: 'int', defaultValue: '4096', min: 1, max: 65535, description: 'Connections the kernel may queue before the service accepts them (the listen backlog; Linux caps it at net.core.somaxconn).' },
  { key: 'acceptors', tier: 'tuning', env: 'TOLLBOOTH_ACCEPTORS', flag: 'acceptors', kind: 'int', defaultValue: '16', min: 1, max: 64, description: 'Listening descriptors for the one socket, each accepting one new connection per turn of the event loop (Node 20 accepts one per turn per descriptor): more let a crowd of new connections in faster when the loop is busy. The copies come from a helper process at start; when it cannot run, the start logs a warning and accepts with one. 1: the server\'s own only.' },
  { key: 'maxConnections', tier: 'tuning', env: 'TOLLBOOTH_MAX_CONNECTIONS', flag: 'max-connections', kind: 'int', defaultValue: '10000', min: 0, max: 1000000, description: 'Open client connections at most; one more is closed at once. The start warns when the file-descriptor limit cannot hold this many. 0: no cap.' },
  { key: 'trustProxy', tier: 'operator', env: 'TOLLBOOTH_TRUST_PROXY', flag: 'trust-proxy', kind: 'string', defaultValue: 'false', description: 'Which proxies\' X-Forwarded-For gives the client address: false (the peer is the client), true (any), a hop count, or a comma-separated list of addresses and CIDRs.' },
  { key: 'shutdownDrainMs', tier: 'tuning', env: 'TOLLBOOTH_SHUTDOWN_DRAIN_MS', flag: 'shutdown-drain-ms', kind: 'int', defaultValue: '5000', min: 0, max: 600000, description: 'On SIGTERM, how long /readyz answers 503 while every other request is still served, so a load balancer stops sending traffic here before the listener closes; then the service stops accepting, finishes the requests in flight and exits. 0: close at once. SIGINT (Ctrl-C) does not drain.' },
  { key: 'smtpUrl', tier: 'operator', env: 'TOLLBOOTH_SMTP_URL', flag: 'smtp-url', kind: 'string', secret: true, defaultValue: undefined, description: 'SMTP server that sends the account mails: smtps://host:465 (TLS), or smtp://host:587, which must upgrade with STARTTLS or no mail is sent; with user:password@ if it needs them (a secret, never logged); no path or query. Unset: mail is not sent but written to the log (its link only as TOLLBOOTH_MAIL_LOG_LINKS says).' },
  { key: 'smtpAllowPlaintextLoopback', tier: 'tuning', env: 'TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK', flag: 'smtp-allow-plaintext-loopback', kind: 'bool', defaultValue: 'false', description: 'Lets smtp:// to a server on this machine (127.0.0.0/8, ::1, localhost) go on in clear when it offers no STARTTLS: a development catch-all (Mailpit, MailHog) or a test server. Refused with any other host, and with NODE_ENV=production.' },
  { key: 'mailLogLinks', tier: 'tuning', env: 'TOLLBOOTH_MAIL_LOG_LINKS', flag: 'mail-log-links', kind: 'bool', defaultValue: undefined, description: 'Without TOLLBOOTH_SMTP_URL: whether a mail written to the log carries its text, a live verification or reset link included, at debug level only. Unset: true with the embedded database (development), false with DATABASE_URL, where a link in the log would let whoever reads the logs take over the account: the log then names the mail (id, kind, recipient) and no link is made.' },
  { key: 'publicUrl', tier: 'operator', env: 'TOLLBOOTH_PUBLIC_URL', flag: 'public-url', kind: 'string', defaultValue: undefined, description: 'Base URL of the links in mails (<base>/verify-email?token=..., <base>/reset-password?token=...): the application page that posts the token to the API. Required with DATABASE_URL, and https: with NODE_ENV=production. Unset on the embedded database: http://HOST:PORT (localhost for a wildcard HOST).' },
  { key: 'passkeyRpId', tier: 'tuning', env: 'TOLLBOOTH_PASSKEY_RP_ID', flag: 'passkey-rp-id', kind: 'string', defaultValue: undefined, description: 'The passkeys\' relying party id: the domain they are bound to (example.com lets app.example.com and login.example.com both use them). Each of TOLLBOOTH_PASSKEY_ORIGINS must be on it or a subdomain. Unset: the host of TOLLBOOTH_PUBLIC_URL (localhost for a loopback address, which browsers refuse as a relying party id). Changing it later orphans every passkey made under the old one.' },
  { key: 'passkeyRpName', tier: 'tuning', env: 'TOLLBOOTH_PASSKEY_RP_NAME', flag: 'passkey-rp-name', kind: 'string', defaultValue: 'tollbooth', description: 'The name the browser shows when a passkey is made.' },
  { key: 'passkeyOrigins', tier: 'tuning', env: 'TOLLBOOTH_PASSKEY_ORIGINS', flag: 'passkey-origins', kind: 'string', defaultValue: undefined, description: 'Comma-separated origins (scheme://host[:port], no path) of the pages that call navigator.credentials for this service; an assertion made on any other is refused (PASSKEY_ORIGIN_MISMATCH). https:, or http: on localhost only. Unset: the origin of TOLLBOOTH_PUBLIC_URL (a loopback address by its name: http://localhost:<port>).' },
  { key: 'passkeyChallengeTtlSeconds', tier: 'tuning', env: 'TOLLBOOTH_PASSKEY_CHALLENGE_TTL_SECONDS', flag: 'passkey-challenge-ttl-seconds', kind: 'int', defaultValue: '300', min: 10, max: 900, description: 'How long the challenge of a passkey ceremony (its options) stays usable; each is spent by its first verification, answered or refused.' },
  { key: 'accountPage', tier: 'tuning', env: 'TOLLBOOTH_ACCOUNT_PAGE', flag: 'account-page', kind: 'bool', defaultValue: undefined, description: 'Whether tollbooth serves its account page at GET /account: register, sign in with a passkey or a password and a second factor, add a passkey, enrol TOTP, sign out; the example of the API\'s calls. Unset: true with the embedded database (development), false with DATABASE_URL, where the sign-in pages are the application\'s own.' },
  { key: 'oidc', tier: 'tuning', env: 'TOLLBOOTH_OIDC', flag: 'oidc', kind: 'bool', defaultValue: 'false', description: 'Serve an OpenID Connect provider: issuer <TOLLBOOTH_PUBLIC_URL>/oidc, authorization code flow with PKCE, for the clients registered with `tollbooth clients add`. Its ID tokens are signed by the key ring (EdDSA or ES256): refused with TOLLBOOTH_JWT_ALGORITHM=HS256.' },
  { key: 'oidcAccessTokenTtlSeconds', tier: 'tuning', env: 'TOLLBOOTH_OIDC_ACCESS_TOKEN_TTL_SECONDS', flag: 'oidc-access-token-ttl-seconds', kind: 'int', defaultValue: '600', min: 60, max: 86400, description: 'Lifetime of the access and ID tokens the OpenID Connect provider issues; its refresh tokens live TOLLBOOTH_REFRESH_TOKEN_TTL_SECONDS, within the tollbooth session the sign-in opened.' },
  { key: 'oidcInteractionTtlSeconds', tier: 'tuning', env: 'TOLLBOOTH_OIDC_INTERACTION_TTL_SECONDS', flag: 'oidc-interaction-ttl-seconds', kind: 'int', defaultValue: '600', min: 1, max: 3600, description: 'Time a user has on the OpenID Connect sign-in pages (password, second factor, consent) before the sign-in expires and must start again at the application.' },
  { key: 'oidcClientsFile', tier: 'tuning', env: 'TOLLBOOTH_OIDC_CLIENTS_FILE', flag: 'oidc-clients-file', kind: 'string', defaultValue: undefined, description: 'A JSON file of relying parties ({"clients": [...]}, in OpenID Connect\'s metadata names), applied at every start as `tollbooth clients apply` does: its clients added or updated, those it no longer lists removed; clients added with `tollbooth clients add` are left alone. A file that does not parse or a client it describes that is refused stops the start. Needs TOLLBOOTH_OIDC.' },
  { key: 'oidcRegistration', tier: 'tuning', env: 'TOLLBOOTH_OIDC_REGISTRATION', flag: 'oidc-registration', kind: 'enum', choices: ['off', 'token', 'open'], defaultValue: 'off', description: 'Dynamic client registration (RFC 7591) at <issuer>/reg. `off`: none; clients come from `tollbooth clients` or the clients file. `token`: a registration must carry TOLLBOOTH_OIDC_REGISTRATION_TOKEN as its bearer token. `open`: anyone may register a client (what MCP clients expect); its users are always asked for consent. A registered client is never first-party, and may not name URLs the provider would fetch (jwks_uri, sector_identifier_uri, request_uris). Registrations are bounded per client address as account registrations are (TOLLBOOTH_REGISTER_THROTTLE_CLIENT_REQUESTS, counted apart). Needs TOLLBOOTH_OIDC.' },
  { key: 'oidcRegistrationToken', tier: 'tuning', env: 'TOLLBOOTH_OIDC_REGISTRATION_TOKEN', flag: 'oidc-registration-token', kind: 'string', secret: true, defaultValue: undefined, description: 'The initial access token a dynamic client registration presents with TOLLBOOTH_OIDC_REGISTRATION=token (at least 32 characters: openssl rand -base64 32), compared in constant time.' },
  { key: 'mailFrom', tier: 'operator', env: 'TOLLBOOTH_MAIL_FROM', flag: 'mail-from', kind: 'string', defaultValue: 'tollbooth <no-reply@localhost>', description: 'Sender (From) of the mails.' },
  { key: 'mailMaxAttempts', tier: 'tuning', env: 'TOLLBOOTH_MAIL_MAX_ATTEMPTS', flag: 'mail-max-attempts', kind: 'int', defaultValue: '8', min: 1, max: 100, description: 'Send attempts of one mail before it is given up (logged at error, kept in the outbox as failed).' },
  { key: 'mailRetryDelayMs', tier: 'tuning', env: 'TOLLBOOTH_MAIL_RETRY_DELAY_MS', flag: 'mail-retry-delay-ms', kind: 'int', defaultValue: '30000', min: 10, max: 3600000, description: 'Wait before the first retry of a failed send, doubled per attempt, at most an hour.' },
  { key: 'mailPollIntervalMs', tier: 'tuning', env: 'TOLLBOOTH_MAIL_POLL_INTERVAL_MS', flag: 'mail-poll-interval-ms', kind: 'int', defaultValue: '10000', min: 50, max: 600000, description: 'How often each replica looks in the outbox for mail it did not queue itself (retries, a stopped replica\'s); mail a request queues is sent at once.' },
  { key: 'passwordResetTtlSeconds', tier: 'tuning', env: 'TOLLBOOTH_PASSWORD_RESET_TTL_SECONDS', flag: 'password-reset-ttl-seconds', kind: 'int', defaultValue: '3600', min: 60, max: 86400, description: 'Lifetime of a password-reset link.' },
  { key: 'emailVerificationTtlSeconds', tier: 'tuning', env: 'TOLLBOOTH_EMAIL_VERIFICATION_TTL_SECONDS', flag: 'email-verification-ttl-seconds', kind: 'int', defaultValue: '86400', min: 60, max: 2592000, description: 'Lifetime of an email-verification link.' },
  { key: 'mailThrottleAccountRequests', tier: 'tuning', env: 'TOLLBOOTH_MAIL_THROTTLE_ACCOUNT_REQUESTS', flag: 'mail-throttle-account-requests', kind: 'int', defaultValue: '3', min: 1, max: 1000000, description: 'Password-reset, verification-again and enumeration-safe registration requests for one email address (known or not) per window; past it, password reset and verification again answer 429 TOO_MANY_ATTEMPTS with Retry-After (alike for an address without an account), and registration answers as ever but sends nothing.' },
  { key: 'mailThrottleAddressRequests', tier: 'tuning', env: 'TOLLBOOTH_MAIL_THROTTLE_ADDRESS_REQUESTS', flag: 'mail-throttle-address-requests', kind: 'int', defaultValue: '30', min: 1, max: 1000000, description: 'Password-reset and verification-again requests one client address (IPv6 by /64) may make per window; past it: 429 TOO_MANY_ATTEMPTS with Retry-After.' },
  { key: 'mailThrottleMailboxMails', tier: 'tuning', env: 'TOLLBOOTH_MAIL_THROTTLE_MAILBOX_MAILS', flag: 'mail-throttle-mailbox-mails', kind: 'int', defaultValue: '100', min: 1, max: 1000000, description: 'Account mails (verification, password reset, registration notice) one mailbox may be sent per window, the address folded (lowercase, the local part\'s +tag and dots dropped, for every domain): a+1@x.com, a.b@x.com and ab@x.com are one mailbox. Past it, registration answers as ever but sends nothing (logged at info); password reset and verification again answer 429.' },
  { key: 'mailThrottleWindowSeconds', tier: 'tuning', env: 'TOLLBOOTH_MAIL_THROTTLE_WINDOW_SECONDS', flag: 'mail-throttle-window-seconds', kind: 'int', defaultValue: '3600', min: 1, max: 604800, description: 'The counting window of the mail bounds, from a key\'s first request.' },
  { key: 'requireVerifiedEmail', tier: 'operator', env: 'TOLLBOOTH_REQUIRE_VERIFIED_EMAIL', flag: 'require-verified-email', kind: 'bool', defaultValue: 'false', description: 'Login of an account whose address is not verified is refused (403 EMAIL_NOT_VERIFIED), after the password matched; so is the refresh of its sessions.' },
  { key: 'registrationMode', tier: 'operator', env: 'TOLLBOOTH_REGISTRATION_MODE', flag: 'registration-mode', kind: 'enum', choices: ['immediate', 'enumeration-safe'], defaultValue: 'enumeration-safe', description: 'enumeration-safe: 202 with the same body, headers and work whether or not the address is taken; the new address gets the verification mail, a taken one\'s owner a notice; logins then need a verified address, and an unverified account\'s right password is answered as a wrong one. immediate: 201 with tokens and 409 for a taken address, so anyone can learn whether an address has an account (docs/explanation/security.md).' },
  { key: 'secondFactor', tier: 'tuning', env: 'TOLLBOOTH_SECOND_FACTOR', flag: 'second-factor', kind: 'enum', choices: ['allowed', 'required', 'off'], defaultValue: 'allowed', description: 'allowed: accounts may enrol TOTP (and recovery codes); a password login of one that did answers a challenge for the second step instead of tokens. required: the same, and a password login of an account without one answers a challenge that only enrols TOTP and completes the sign-in with its first code. off: no enrolment, and no second step asked of anyone (factors already enrolled are kept, unused). TOTP secrets are sealed with TOLLBOOTH_KEY_ENCRYPTION_KEY: with DATABASE_URL and none set, enrolment answers 501 SECOND_FACTOR_UNAVAILABLE.' },
  { key: 'sessionMaxLifetimeSeconds', tier: 'tuning', env: 'TOLLBOOTH_SESSION_MAX_LIFETIME_SECONDS', flag: 'session-max-lifetime-seconds', kind: 'int', defaultValue: '7776000', min: 60, max: 315360000, description: 'Absolute lifetime of a session (90 days), from the login or registration that opened it: refreshing never extends it past this (a refresh token expires at the earlier of its own lifetime and its session\'s end); then the user signs in again.' },
  { key: 'refreshGraceSeconds', tier: 'tuning', env: 'TOLLBOOTH_REFRESH_GRACE_SECONDS', flag: 'refresh-grace-seconds', kind: 'int', defaultValue: '5', min: 0, max: 300, description: 'A refresh token presented again this long after it was rotated (a retry, a second tab) gets the same successor instead of counting as reuse; later, reuse revokes the session. 0: any second use is reuse.' },
  { key: 'sessionCheckCacheMs', tier: 'tuning', env: 'TOLLBOOTH_SESSION_CHECK_CACHE_MS', flag: 'session-check-cache-ms', kind: 'int', defaultValue: '1000', min: 0, max: 60000, description: 'How long each process remembers that an access token\'s session is live (one query per session and period): a session revoked through another replica is refused here within this time at most; one revoked through this process at once. 0: a query on every authenticated request.' },
  { key: 'purgeIntervalSeconds', tier: 'tuning', env: 'TOLLBOOTH_PURGE_INTERVAL_SECONDS', flag: 'purge-interval-seconds', kind: 'int', defaultValue: '3600', min: 0, max: 604800, description: 'How often each replica deletes expired, rotated-and-expired and revoked refresh tokens, ended sessions, spent or expired reset and verification links, mail rows finished a week ago, mail-request counts and failed-login counts a week past their window (first run one interval after the start). Replicas running it together share the work. 0: never.' },
  { key: 'purgeBatchSize', tier: 'tuning', env: 'TOLLBOOTH_PURGE_BATCH_SIZE', flag: 'purge-batch-size', kind: 'int', defaultValue: '1000', min: 1, max: 100000, description: 'Rows the purge job deletes per statement (each its own short transaction), so it never holds many locks for long.' },
]
