/** Route schemas (TypeBox = JSON Schema + TS types); the OpenAPI document is generated from them. */
import { Type, type Static, type TString } from '@sinclair/typebox'

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

export const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254, description: 'Compared case-insensitively; surrounding spaces are ignored' })

/**
 * Free text that PostgreSQL stores: at least one non-space character, and no NUL, which a
 * `text` column refuses (22021) and which would otherwise surface as a 500 after the work is
 * done. A lookahead, because `[^\0]*\S[^\0]*` backtracks quadratically on a long string.
 */
export const visibleTextPattern = '^(?!\\s*$)[^\\u0000]*$'
/** What a failed `pattern` means, in words, for the error message (by pattern). */
export const patternMessages: Readonly<Record<string, string>> = {
  [visibleTextPattern]: 'must contain a non-space character and no NUL character',
}
function Text (maxLength: number): TString {
  return Type.String({ minLength: 1, maxLength, pattern: visibleTextPattern })
}
/** Bounded so a megabyte "password" cannot buy a long hash; bcrypt adds its own 72-byte limit. */
export const Password = Type.String({ minLength: 8, maxLength: 1024 })
export const RefreshToken = Type.String({ minLength: 16, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' })

export const User = Type.Object({
  id: Type.String({ format: 'uuid' }),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
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
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: '1 to 100, default 20' })),
  cursor: Type.Optional(Type.String({ maxLength: 64, description: 'nextCursor of the previous page' })),
}, { additionalProperties: false })
export type ListPostsQuery = Static<typeof ListPostsQuery>

export const PostPage = Type.Object({
  items: Type.Array(Type.Ref('Post')),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
})

export const bearerAuth = [{ bearerAuth: [] }]
