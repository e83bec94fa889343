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

/**
 * Fastify's `childLoggerFactory`: a request's child logger (its `reqId` bound) is made the first
 * time the request writes a line at an enabled level. pino's `child()` is a visible share of a
 * refusal's cost, and most requests, every refusal among them, write no line. The child is
 * pino's own, with the same bindings; until its first line the request follows its parent's
 * level as it is then (the service never changes its level while it runs).
 */
export function lazyChildLogger (logger: pino.Logger, bindings: pino.Bindings, options: pino.ChildLoggerOptions): pino.Logger {
  // Not a pino logger (Fastify's null logger when logging is off): as Fastify would.
  if (typeof logger.isLevelEnabled !== 'function') return logger.child(bindings, options)
  return new LazyChildLogger(logger, bindings, options) as unknown as pino.Logger
}

/** One per request: its methods live on the prototype, so a request that writes nothing costs one small object. */
class LazyChildLogger {
  private made: pino.Logger | undefined

  constructor (private readonly parent: pino.Logger, private readonly bindingsOfChild: pino.Bindings, private readonly options: pino.ChildLoggerOptions) {}

  private real (): pino.Logger {
    return (this.made ??= this.parent.child(this.bindingsOfChild, this.options))
  }

  isLevelEnabled (level: string): boolean {
    if (this.made !== undefined) return this.made.isLevelEnabled(level)
    if (this.options.level === undefined) return this.parent.isLevelEnabled(level)
    const values = this.parent.levels.values
    return (values[level] ?? 0) >= (values[this.options.level] ?? Infinity)
  }

  get level (): string { return this.made?.level ?? this.options.level ?? this.parent.level }
  set level (value: string) { this.real().level = value }
  get levels (): pino.LevelMapping { return this.parent.levels }
  get levelVal (): number { return this.made?.levelVal ?? this.parent.levels.values[this.level] ?? 0 }

  fatal (...args: unknown[]): void { this.write('fatal', args) }
  error (...args: unknown[]): void { this.write('error', args) }
  warn (...args: unknown[]): void { this.write('warn', args) }
  info (...args: unknown[]): void { this.write('info', args) }
  debug (...args: unknown[]): void { this.write('debug', args) }
  trace (...args: unknown[]): void { this.write('trace', args) }
  silent (): void {}

  child (bindings: pino.Bindings, options?: pino.ChildLoggerOptions): pino.Logger { return this.real().child(bindings, options) }
  bindings (): pino.Bindings { return this.real().bindings() }
  setBindings (bindings: pino.Bindings): void { this.real().setBindings(bindings) }
  flush (callback?: (err?: Error) => void): void { this.parent.flush(callback) }

  private write (level: Level, args: unknown[]): void {
    if (this.isLevelEnabled(level)) (this.real()[level] as (...args: unknown[]) => void)(...args)
  }
}
