/**
 * The one registry of coded errors. Callers and tests match on `err.code`,
 * never on message text; every code here is documented in docs/reference/errors.md
 * (a test keeps the two in step).
 */
export const errorRegistry = {
  VALIDATION_FAILED: { status: 400, message: 'The request is not valid' },
  REQUEST_MALFORMED: { status: 400, message: 'The HTTP request is malformed' },
  BODY_INVALID_JSON: { status: 400, message: 'The request body is not valid JSON' },
  PASSWORD_TOO_LONG: { status: 400, message: 'The password is longer than the hashing algorithm accepts' },
  PASSWORD_MALFORMED: { status: 400, message: 'The password is not well-formed text (it holds a lone UTF-16 surrogate)' },
  PASSWORD_BLANK: { status: 400, message: 'The password must contain a visible character' },
  PASSWORD_TOO_COMMON: { status: 400, message: 'The password is one of the most common passwords; choose another' },
  ACCOUNT_TOKEN_INVALID: { status: 401, message: 'The link is invalid, already used or expired; ask for a new one' },
  AUTH_INVALID_CREDENTIALS: { status: 401, message: 'Email or password is incorrect' },
  AUTH_TOKEN_MISSING: { status: 401, message: 'A Bearer access token is required' },
  AUTH_TOKEN_INVALID: { status: 401, message: 'The access token is invalid or has expired' },
  AUTH_REFRESH_TOKEN_INVALID: { status: 401, message: 'The refresh token is invalid, expired or revoked' },
  AUTH_REFRESH_TOKEN_REUSED: { status: 401, message: 'The refresh token was already used; its whole family is now revoked' },
  LOGIN_CHALLENGE_INVALID: { status: 401, message: 'The sign-in challenge is invalid, already used or expired; sign in with the password again' },
  SECOND_FACTOR_INVALID: { status: 401, message: 'The code is incorrect, expired or already used' },
  TOTP_CODE_REUSED: { status: 401, message: 'This code was already used; wait for the next one' },
  SECOND_FACTOR_DISABLED: { status: 403, message: 'Second factors are turned off on this service' },
  SECOND_FACTOR_NOT_FOUND: { status: 404, message: 'No such second factor on this account (or none waiting for confirmation)' },
  TOTP_ALREADY_ENROLLED: { status: 409, message: 'A confirmed TOTP factor exists; remove it before enrolling another' },
  SECOND_FACTOR_UNAVAILABLE: { status: 501, message: 'Second factors need a key-encryption key (TOLLBOOTH_KEY_ENCRYPTION_KEY) on this service' },
  EMAIL_NOT_VERIFIED: { status: 403, message: 'The email address is not verified yet; open the link in the verification mail' },
  AUTH_SESSION_ENDED: { status: 401, message: 'The session of this access token has ended (signed out, revoked or expired); sign in again' },
  CURRENT_PASSWORD_INCORRECT: { status: 403, message: 'The password is incorrect' },
  SESSION_NOT_FOUND: { status: 404, message: 'No such session among the signed-in user\'s live sessions' },
  PASSKEY_CHALLENGE_INVALID: { status: 400, message: 'The passkey challenge is unknown, already used or expired; ask for new options' },
  PASSKEY_ORIGIN_MISMATCH: { status: 400, message: 'The passkey was used on a page whose origin this service does not allow' },
  PASSKEY_RP_ID_MISMATCH: { status: 400, message: 'The passkey response is for another relying party' },
  PASSKEY_USER_NOT_VERIFIED: { status: 400, message: 'The authenticator did not verify the user (PIN or biometrics); user verification is required' },
  PASSKEY_CREDENTIAL_UNKNOWN: { status: 401, message: 'No account has this passkey' },
  PASSKEY_COUNTER_REGRESSED: { status: 401, message: 'The passkey\'s signature counter went back: the authenticator may have been cloned' },
  PASSKEY_INVALID: { status: 401, message: 'The passkey response could not be verified' },
  PASSKEY_NOT_FOUND: { status: 404, message: 'No such passkey among the signed-in user\'s passkeys' },
  PASSKEY_ALREADY_REGISTERED: { status: 409, message: 'This passkey is already registered' },
  PASSKEY_LAST_SIGN_IN_METHOD: { status: 409, message: 'This passkey is the account\'s last way to sign in (it has no password); add another first' },
  NOT_FOUND: { status: 404, message: 'No such route or resource' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'The method is not allowed on this route' },
  REQUEST_TIMEOUT: { status: 408, message: 'The request was not received in time' },
  EMAIL_TAKEN: { status: 409, message: 'An account with this email already exists' },
  BODY_TOO_LARGE: { status: 413, message: 'The request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body must be application/json' },
  TOO_MANY_ATTEMPTS: { status: 429, message: 'Too many failed sign-in attempts; retry after the given delay' },
  HEADERS_TOO_LARGE: { status: 431, message: 'The request headers are too large' },
  SERVICE_OVERLOADED: { status: 503, message: 'The service is at capacity; retry after the given delay' },
  HASH_DEADLINE_EXCEEDED: { status: 503, message: 'The password check could not start before its deadline' },
  HASH_CANCELLED: { status: 499, message: 'The password check was cancelled because the client went away' },
  HASH_PARAMS_OUT_OF_BOUNDS: { status: 500, message: 'A stored password hash has parameters outside the allowed bounds' },
  HASH_FORMAT_UNKNOWN: { status: 500, message: 'A stored password hash has an unknown format' },
  HASH_POOL_CLOSED: { status: 503, message: 'The hashing pool is shut down' },
  DATABASE_UNAVAILABLE: { status: 503, message: 'The database cannot be reached; retry after the given delay' },
  NOT_READY: { status: 503, message: 'The service is not ready' },
  SHUTTING_DOWN: { status: 503, message: 'The service is shutting down; retry, another instance will answer' },
  CONFIG_INVALID: { status: 500, message: 'The configuration is not valid' },
  SIGNING_KEY_UNREADABLE: { status: 500, message: 'The access-token signing key cannot be used' },
  INTERNAL: { status: 500, message: 'Internal server error' },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof errorRegistry

export interface TollboothErrorOptions {
  /** Seconds the client should wait before retrying (sent as `Retry-After`). */
  retryAfterSeconds?: number
  /** The request field at fault, for validation errors. */
  field?: string
  cause?: unknown
}

export class TollboothError extends Error {
  readonly code: ErrorCode
  readonly statusCode: number
  readonly retryAfterSeconds: number | undefined
  readonly field: string | undefined

  constructor (code: ErrorCode, message?: string, options: TollboothErrorOptions = {}) {
    // An answer to the client (a 4xx, an overload 503) is not a fault: its stack is never logged, and
    // capturing one costs more than the rest of the object, CPU a storm of refusals takes from the hashes.
    const stackTraceLimit = Error.stackTraceLimit
    if (errorRegistry[code].status < 500 || options.retryAfterSeconds !== undefined) Error.stackTraceLimit = 0
    try {
      super(message ?? errorRegistry[code].message, options.cause === undefined ? undefined : { cause: options.cause })
    } finally {
      Error.stackTraceLimit = stackTraceLimit
    }
    this.name = 'TollboothError'
    this.code = code
    this.statusCode = errorRegistry[code].status
    this.retryAfterSeconds = options.retryAfterSeconds
    this.field = options.field
  }
}

export function createError (code: ErrorCode, message?: string, options?: TollboothErrorOptions): TollboothError {
  return new TollboothError(code, message, options)
}

export function isTollboothError (err: unknown, code?: ErrorCode): err is TollboothError {
  return err instanceof TollboothError && (code === undefined || err.code === code)
}
