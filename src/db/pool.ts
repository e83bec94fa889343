import pg from 'pg'

export type Queryable = pg.Pool | pg.PoolClient

// bigint ids (posts) come back as strings by default; they fit in a JS number for centuries.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number.parseInt(value, 10))

export function createDatabasePool (url: string, size: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: size,
    // Fail fast instead of hanging the request when the database is gone.
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    application_name: 'tollbooth',
  })
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {})
  return pool
}

/** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
export async function withTransaction<T> (pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.release()
  }
}
