/** Route schemas (TypeBox = JSON Schema + TS types); the OpenAPI document is generated from them. */
import { Type, type Static, type TString } from '@sinclair/typebox'
import { passwordMaxLength, passwordMinLength } from '../accounts/index.js'

export const ErrorResponse = Type.Object({
  error: Type.Object({
    code: Type.String({ description: 'Stable machine-readable code; see docs/reference/errors.md' }),
    message: Type.String(),
    field: Type.Optional(Type.String({ description: 'The request field at fault (validation errors)' })),
  }),
}, { $id: 'ErrorResponse', description: 'Every error has this shape' })

const errorRef = Type.Ref('ErrorResponse')
export function errors (...statuses: number[]): Record<number, typeof errorRef> {
  return Object.fromEntries(statuses.map((status) => [status, errorRef]))
}

const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254, description: 'Compared case-insensitively; surrounding spaces are ignored' })

/**
 * Free text PostgreSQL stores: a non-space character and no NUL (a `text` column refuses it, a
 * 500 after the work). A lookahead, as `[^\0]*\S[^\0]*` backtracks quadratically.
 */
const visibleTextPattern = '^(?!\\s*$)[^\\u0000]*$'
/** A page size: exactly the decimal integers 1 to 100, no sign, no leading zero (the document says what the code takes). */
const pageLimitPattern = '^(?:[1-9][0-9]?|100)$'
/**
 * A page cursor exactly as issued: unpadded base64url of `p:` and 1 to 15 digits (routes/posts.ts),
 * so a schema-valid cursor always gets a page, never a 400. With every byte an ASCII digit, each
 * base64 character can take only the values below.
 */
const digitPairStart = '(?:[MN][DTjz]|O[DT])' // the first two characters of a group starting with a digit
const threeDigits = `${digitPairStart}[AEIMQUYcgk][w-z0-5]`
const oneDigitTail = '(?:[MN][AQgw]|O[AQ])'
const twoDigitsTail = `${digitPairStart}[AEIMQUYcgk]`
// `p:` and the first digit, then 0 to 14 more digits.
const pageCursorPattern = `^cDo[w-z0-5](?:${threeDigits}){0,4}(?:${oneDigitTail}|${twoDigitsTail})?$`
/** What a failed `pattern` means, in words, for the error message (by pattern). */
export const patternMessages: Readonly<Record<string, string>> = {
  [visibleTextPattern]: 'must contain a non-space character and no NUL character',
  [pageLimitPattern]: 'must be an integer from 1 to 100',
  [pageCursorPattern]: 'is not a cursor this service issued',
}
function Text (maxLength: number): TString {
  return Type.String({ minLength: 1, maxLength, pattern: visibleTextPattern })
}
/** Bounded so a megabyte "password" cannot buy a long hash; bcrypt adds its own 72-byte limit. */
const Password = Type.String({ minLength: passwordMinLength, maxLength: passwordMaxLength })
const RefreshToken = Type.String({ minLength: 16, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' })

export const User = Type.Object({
  id: Type.String({ format: 'uuid' }),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  emailVerified: Type.Boolean({ description: 'Whether the owner opened the link of the verification mail (or reset the password by mail)' }),
}, { $id: 'User' })

export const AuthResponse = Type.Object({
  user: Type.Ref('User'),
  accessToken: Type.String({ description: 'JWT (HS256); send as `Authorization: Bearer <token>`' }),
  refreshToken: Type.String({ description: 'Opaque, single use: each refresh returns a new one' }),
  expiresIn: Type.Integer({ description: 'Access token lifetime in seconds' }),
}, { $id: 'AuthResponse' })

export const RegisterBody = Type.Object({
  email: Email,
  password: Password,
  name: Type.Optional(Text(100)),
}, { additionalProperties: false })
export type RegisterBody = Static<typeof RegisterBody>

export const LoginBody = Type.Object({
  email: Email,
  password: Type.String({ minLength: 1, maxLength: 1024 }),
}, { additionalProperties: false })
export type LoginBody = Static<typeof LoginBody>

export const RefreshBody = Type.Object({ refreshToken: RefreshToken }, { additionalProperties: false })
export type RefreshBody = Static<typeof RefreshBody>

export const Post = Type.Object({
  id: Type.Integer(),
  authorId: Type.String({ format: 'uuid' }),
  title: Type.String(),
  body: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
}, { $id: 'Post' })

export const CreatePostBody = Type.Object({
  title: Text(200),
  body: Text(10000),
}, { additionalProperties: false })
export type CreatePostBody = Static<typeof CreatePostBody>

export const ListPostsQuery = Type.Object({
  // A string: query values are not coerced (coerceTypes is off), so the pattern carries the range.
  limit: Type.Optional(Type.String({ pattern: pageLimitPattern, description: 'Page size, an integer from 1 to 100; default 20' })),
  cursor: Type.Optional(Type.String({ pattern: pageCursorPattern, description: 'nextCursor of the previous page, as it was sent' })),
}, { additionalProperties: false })
export type ListPostsQuery = Static<typeof ListPostsQuery>

export const PostPage = Type.Object({
  items: Type.Array(Type.Ref('Post')),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
})

/** The token of a mail's link (`?token=...`): 32 random bytes, base64url. */
const AccountToken = Type.String({ minLength: 16, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$', description: 'The `token` parameter of the link in the mail' })

export const EmailBody = Type.Object({ email: Email }, { additionalProperties: false })
export type EmailBody = Static<typeof EmailBody>

export const AccountTokenBody = Type.Object({ token: AccountToken }, { additionalProperties: false })
export type AccountTokenBody = Static<typeof AccountTokenBody>

export const ResetPasswordBody = Type.Object({ token: AccountToken, password: Password }, { additionalProperties: false })
export type ResetPasswordBody = Static<typeof ResetPasswordBody>

export const mailAcceptedMessage = 'If this address can receive it, a message is on its way.'

/** The one answer of the mail-sending routes, whatever the address: it tells nobody whether an account has it. */
export const MailAccepted = Type.Object({
  message: Type.String(),
}, { $id: 'MailAccepted', description: 'The same body whether or not an account has the address' })

export const bearerAuth = [{ bearerAuth: [] }]

export const Session = Type.Object({
  id: Type.String({ format: 'uuid' }),
  createdAt: Type.String({ format: 'date-time', description: 'The sign-in (login or registration) that opened it' }),
  lastUsedAt: Type.String({ format: 'date-time', description: 'Its last sign-in or refresh' }),
  userAgent: Type.Union([Type.String(), Type.Null()], { description: 'The User-Agent of the sign-in (at most 512 characters)' }),
  address: Type.Union([Type.String(), Type.Null()], { description: 'The client address of the sign-in' }),
  current: Type.Boolean({ description: 'The session of the access token that asks' }),
}, { $id: 'Session' })

export const SessionList = Type.Object({ items: Type.Array(Type.Ref('Session')) })

export const SessionParams = Type.Object({ id: Type.String({ format: 'uuid' }) })
export type SessionParams = Static<typeof SessionParams>

export const DeleteAccountBody = Type.Object({
  password: Type.String({ minLength: 1, maxLength: 1024 }),
}, { additionalProperties: false })
export type DeleteAccountBody = Static<typeof DeleteAccountBody>

export const ChangePasswordBody = Type.Object({
  currentPassword: Type.String({ minLength: 1, maxLength: 1024 }),
  newPassword: Password,
}, { additionalProperties: false })
export type ChangePasswordBody = Static<typeof ChangePasswordBody>

/** A sign-in challenge as issued: 32 random bytes, base64url. */
const ChallengeToken = Type.String({ minLength: 43, maxLength: 43, pattern: '^[A-Za-z0-9_-]+$', description: 'The `challenge` of the password login\'s answer' })
const SecondStepMethod = Type.Union([Type.Literal('totp'), Type.Literal('recovery_code')])
/** A TOTP code (six digits) or a recovery code (`xxxx-xxxx-xxxx`, any case, dashes and spaces ignored). */
const FactorCode = Type.String({ minLength: 6, maxLength: 32, description: 'Six digits for totp; a recovery code as shown (case, dashes and spaces ignored)' })

export const SecondFactorChallenge = Type.Object({
  mfaRequired: Type.Literal(true),
  enrolmentRequired: Type.Optional(Type.Literal(true, { description: 'TOLLBOOTH_SECOND_FACTOR=required and the account has no factor: enrol TOTP with this challenge (POST /auth/login/totp), then complete with its first code' })),
  challenge: Type.String({ description: 'Single use; send it to POST /auth/login/second-factor with a code' }),
  methods: Type.Array(SecondStepMethod, { description: 'What may complete the sign-in' }),
  expiresIn: Type.Integer({ description: 'Seconds the challenge stays valid' }),
}, { $id: 'SecondFactorChallenge', description: 'The password was right; the sign-in waits for a second factor. No tokens yet.' })

export const SecondFactorBody = Type.Object({
  challenge: ChallengeToken,
  method: SecondStepMethod,
  code: FactorCode,
}, { additionalProperties: false })
export type SecondFactorBody = Static<typeof SecondFactorBody>

export const ChallengeBody = Type.Object({ challenge: ChallengeToken }, { additionalProperties: false })
export type ChallengeBody = Static<typeof ChallengeBody>

const RecoveryCodeList = Type.Array(Type.String(), { description: 'Ten recovery codes, each single use, shown this once' })

export const SecondFactorSignIn = Type.Object({
  user: Type.Ref('User'),
  accessToken: Type.String(),
  refreshToken: Type.String(),
  expiresIn: Type.Integer(),
  recoveryCodes: Type.Optional(RecoveryCodeList),
}, { description: 'As AuthResponse; with `recoveryCodes` when the step confirmed the TOTP enrolled with an enrolment challenge' })

export const TotpEnrolment = Type.Object({
  secret: Type.String({ description: 'Base32, for typing into an authenticator app; shown this once' }),
  uri: Type.String({ description: 'otpauth://totp/... for a QR code; shown this once' }),
}, { $id: 'TotpEnrolment' })

export const ConfirmTotpBody = Type.Object({ code: Type.String({ minLength: 6, maxLength: 6, pattern: '^[0-9]{6}$' }) }, { additionalProperties: false })
export type ConfirmTotpBody = Static<typeof ConfirmTotpBody>

export const RecoveryCodes = Type.Object({ recoveryCodes: RecoveryCodeList }, { $id: 'RecoveryCodes' })

/** The password again, or a code of one of the account's factors. */
export const FactorProofBody = Type.Union([
  Type.Object({ password: Type.String({ minLength: 1, maxLength: 1024 }) }, { additionalProperties: false }),
  Type.Object({ method: SecondStepMethod, code: FactorCode }, { additionalProperties: false }),
])
export type FactorProofBody = Static<typeof FactorProofBody>

export const FactorList = Type.Object({
  items: Type.Array(Type.Object({
    method: Type.Union([Type.Literal('totp'), Type.Literal('recovery_code')]),
    createdAt: Type.String({ format: 'date-time' }),
    confirmed: Type.Optional(Type.Boolean({ description: 'totp: confirmed by a first code (only then asked at sign-in)' })),
    remaining: Type.Optional(Type.Integer({ description: 'recovery_code: how many are still unused' })),
  })),
})
