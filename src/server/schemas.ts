/** Route schemas (TypeBox = JSON Schema + TS types); the OpenAPI document is generated from them. */
import { Type, type Static } from '@sinclair/typebox'

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

export const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254, description: 'Compared case-insensitively' })
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
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
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
  title: Type.String({ minLength: 1, maxLength: 200 }),
  body: Type.String({ minLength: 1, maxLength: 10000 }),
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
