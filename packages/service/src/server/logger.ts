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
