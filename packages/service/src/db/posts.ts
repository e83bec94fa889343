import type { Queryable } from './pool.js'

export interface Post {
  id: number
  authorId: string
  title: string
  body: string
  createdAt: string
}

interface PostRow { id: number, author_id: string, title: string, body: string, created_at: Date }

function toPost (row: PostRow): Post {
  return { id: row.id, authorId: row.author_id, title: row.title, body: row.body, createdAt: row.created_at.toISOString() }
}

export async function insertPost (db: Queryable, post: { authorId: string, title: string, body: string }): Promise<Post> {
  const { rows } = await db.query<PostRow>(
    'INSERT INTO posts (author_id, title, body) VALUES ($1, $2, $3) RETURNING id, author_id, title, body, created_at',
    [post.authorId, post.title, post.body])
  return toPost(rows[0] as PostRow)
}

/** Newest first, keyset-paginated on id: `beforeId` is the last id of the previous page. */
export async function listPosts (db: Queryable, limit: number, beforeId: number | undefined): Promise<Post[]> {
  const { rows } = await db.query<PostRow>(
    `SELECT id, author_id, title, body, created_at FROM posts
      WHERE ($2::bigint IS NULL OR id < $2) ORDER BY id DESC LIMIT $1`,
    [limit, beforeId ?? null])
  return rows.map(toPost)
}
