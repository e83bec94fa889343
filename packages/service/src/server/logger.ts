/**
 * The one pino setup: every logger of the service (the CLI's, startService's, Fastify's, the
 * tests' capturing one) comes from here, so secrets are redacted in one place.
 */
import pino from 'pino'

/** Secrets never reach the logs, whatever a future log line includes. */
const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.password',
  '*.currentPassword',
  '*.newPassword',
  '*.token',
  '*.refreshToken',
  '*.accessToken',
  '*.jwtSecret',
  '*.keyEncryptionKey',
  '*.privateKey',
  '*.privatePem',
  '*.databaseUrl',
  '*.smtpUrl',
]

export function loggerOptions (level: string): pino.LoggerOptions {
  return { level, redact: { paths: redactPaths, censor: '[redacted]' } }
}

/** A logger at `level`, to stdout unless another destination is given (tests keep the lines). */
export function createLogger (level: string, destination?: pino.DestinationStream): pino.Logger {
  return destination === undefined ? pino(loggerOptions(level)) : pino(loggerOptions(level), destination)
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
const levels: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace']

/**
 * Fastify's `childLoggerFactory`: a request's child logger (its `reqId` bound) is made the
 * first time the request writes a line at an enabled level, not for every request. pino's
 * `child()` (bindings serialised, the redaction applied to them) took 4.7 % of the main
 * thread's busy time in a profile of the service refusing a crowd (bench/README, "Where a
 * refusal's time goes"), and most requests, every refusal among them, write no line: the
 * one each request passes (`request completed`) is at debug. A line written is the same as
 * before: the child is pino's own, made with the same bindings and options. One difference:
 * until its first line, the request follows its parent's level as it is then (pino fixes a
 * child's level when the child is made); the service never changes its level while it runs.
 */
export function lazyChildLogger (logger: pino.Logger, bindings: pino.Bindings, options: pino.ChildLoggerOptions): pino.Logger {
  // Not a pino logger (Fastify's null logger when logging is off): as Fastify would.
  if (typeof logger.isLevelEnabled !== 'function') return logger.child(bindings, options)
  let child: pino.Logger | undefined
  const real = (): pino.Logger => (child ??= logger.child(bindings, options))
  const enabled = (level: Level): boolean => child !== undefined
    ? child.isLevelEnabled(level)
    : options.level === undefined
      ? logger.isLevelEnabled(level)
      : (logger.levels.values[level] ?? 0) >= (logger.levels.values[options.level] ?? Infinity)
  const lazy: pino.Logger = {
    get level () { return child?.level ?? options.level ?? logger.level },
    set level (value: string) { real().level = value },
    isLevelEnabled: (level: string) => enabled(level as Level),
    child: (more: pino.Bindings, moreOptions?: pino.ChildLoggerOptions) => real().child(more, moreOptions),
    bindings: () => real().bindings(),
    setBindings: (more: pino.Bindings) => { real().setBindings(more) },
    flush: (callback?: (err?: Error) => void) => { logger.flush(callback) },
    get levels () { return logger.levels },
    get levelVal () { return child?.levelVal ?? logger.levels.values[lazy.level] },
    silent: () => {},
  } as unknown as pino.Logger
  for (const level of levels) {
    (lazy as unknown as Record<Level, (...args: unknown[]) => void>)[level] = (...args: unknown[]) => {
      if (enabled(level)) (real()[level] as (...args: unknown[]) => void)(...args)
    }
  }
  return lazy
}
