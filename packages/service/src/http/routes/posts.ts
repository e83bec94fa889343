import type pg from 'pg'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { createError } from '../../errors.js'
import { insertPost, listPosts } from '../../db/index.js'
import { bearerAuth, CreatePostBody, errors, ListPostsQuery, PostPage } from '../schemas.js'
import { requireUser } from '../request-context.js'
import type { AccessTokens, SessionCheck } from '../../accounts/index.js'

export interface PostRoutesOptions {
  db: pg.Pool
  accessTokens: AccessTokens
  sessions: SessionCheck
}

function encodeCursor (id: number): string {
  return Buffer.from(`p:${id}`).toString('base64url')
}

function decodeCursor (cursor: string): number {
  const match = /^p:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
  if (match?.[1] === undefined) throw createError('VALIDATION_FAILED', 'querystring.cursor is not a cursor this service issued', { field: 'cursor' })
  return Number.parseInt(match[1], 10)
}

export const postRoutes: FastifyPluginAsyncTypebox<PostRoutesOptions> = async (app, { db, accessTokens, sessions }) => {
  app.post('/posts', {
    onRequest: requireUser(accessTokens, sessions),
    schema: {
      tags: ['posts'],
      summary: 'Write a post',
      security: bearerAuth,
      body: CreatePostBody,
      response: { 201: Type.Ref('Post'), ...errors(400, 401, 413, 415, 503) },
    },
  }, async (request, reply) => {
    const post = await insertPost(db, { authorId: request.userId, title: request.body.title, body: request.body.body })
    return await reply.code(201).send(post)
  })

  app.get('/posts', {
    schema: {
      tags: ['posts'],
      summary: 'Newest posts first, keyset-paginated',
      querystring: ListPostsQuery,
      response: { 200: PostPage, ...errors(400, 503) },
    },
  }, async (request) => {
    const limit = request.query.limit === undefined ? 20 : Number.parseInt(request.query.limit, 10)
    if (limit < 1 || limit > 100) throw createError('VALIDATION_FAILED', 'querystring.limit must be between 1 and 100', { field: 'limit' })
    const beforeId = request.query.cursor === undefined ? undefined : decodeCursor(request.query.cursor)
    // One extra row tells whether there is a next page.
    const rows = await listPosts(db, limit + 1, beforeId)
    const items = rows.slice(0, limit)
    const last = items[items.length - 1]
    return { items, nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last.id) : null }
  })
}
