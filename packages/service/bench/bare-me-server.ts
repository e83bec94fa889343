/**
 * The reference for `bench:cheap`: a bare Fastify + pg server doing what
 * tollbooth's `GET /api/v1/me` does and nothing else: verify the HS256 access
 * token (fast-jwt, the same verifier options), SELECT the user by id (a pool of
 * the same size, a named prepared statement as tollbooth's), answer the same JSON.
 * No hooks, no metrics, no logging, no schemas, no shedding.
 *
 *   DATABASE_URL=... JWT_SECRET=... DB_POOL_SIZE=10 node dist/bench/bare-me-server.js
 *
 * Prints `listening <url>` once it listens on 127.0.0.1 (a free port).
 */
import Fastify from 'fastify'
import { createVerifier } from 'fast-jwt'
import pg from 'pg'

const databaseUrl = process.env.DATABASE_URL
const secret = process.env.JWT_SECRET
if (databaseUrl === undefined || secret === undefined) throw new Error('DATABASE_URL and JWT_SECRET are required')

const db = new pg.Pool({ connectionString: databaseUrl, max: Number(process.env.DB_POOL_SIZE ?? '10') })
const verify = createVerifier({ key: secret, algorithms: ['HS256'], allowedIss: 'tollbooth', cache: 1000 })
const app = Fastify({ logger: false })

interface UserRow { id: string, email: string, name: string | null, created_at: Date }

app.get('/api/v1/me', async (request, reply) => {
  const match = /^bearer +(\S+)$/i.exec(request.headers.authorization ?? '')
  let userId: string
  try {
    userId = (verify(match?.[1] ?? '') as { sub: string }).sub
  } catch {
    return await reply.code(401).send({ error: { code: 'AUTH_TOKEN_INVALID', message: 'The access token is invalid or has expired' } })
  }
  const { rows } = await db.query<UserRow>({ name: 'user-by-id', text: 'SELECT id, email, name, password_hash, created_at FROM users WHERE id = $1', values: [userId] })
  const user = rows[0]
  if (user === undefined) return await reply.code(401).send({ error: { code: 'AUTH_TOKEN_INVALID', message: 'The access token is invalid or has expired' } })
  return { id: user.id, email: user.email, name: user.name, createdAt: user.created_at.toISOString() }
})

const url = await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`listening ${url}\n`)
process.on('SIGTERM', () => {
  void app.close().then(async () => { await db.end() }).finally(() => process.exit(0))
})
