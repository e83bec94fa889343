/**
 * What PostgreSQL has done so far, read from its statistics on one connection kept open
 * for the purpose: the load lab reads it before and after a measured step, and divides the
 * difference by the logins the step served. Cumulative counters only; the reader's own
 * statements are left out of the statement count.
 */
import pg from 'pg'

export interface DatabaseActivity {
  /** The write-ahead log's position (`pg_current_wal_lsn()`) as bytes from 0/0: WAL written by the whole cluster. */
  walBytes: number
  /**
   * Statements run in this database (`pg_stat_statements` calls, BEGIN and COMMIT included), this
   * reader's own left out; null when the extension is not installed in the database.
   */
  statements: number | null
  /** The server process of this reader's connection: on the same machine, its parent is the postmaster. */
  backendPid: number
}

export interface DatabaseMeter {
  read (): Promise<DatabaseActivity>
  close (): Promise<void>
}

/** Marks the reader's own statements, so that the statement count leaves them out. */
const readerMark = 'tollbooth database meter'

/** Opens the connection the readings go through; `url` may be any role that may read the statistics views. */
export async function openDatabaseMeter (url: string): Promise<DatabaseMeter> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => {})
  await client.connect()
  try {
    const found = await client.query<{ statements: boolean }>(`SELECT /* ${readerMark} */ to_regclass('pg_stat_statements') IS NOT NULL AS statements`)
    const statements = found.rows[0]?.statements === true
      ? `(SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%${readerMark}%')::text`
      : 'NULL'
    const query = `SELECT /* ${readerMark} */ (pg_current_wal_lsn() - '0/0')::text AS wal_bytes, ${statements} AS statements, pg_backend_pid() AS backend_pid`
    return {
      async read () {
        const { rows } = await client.query<{ wal_bytes: string, statements: string | null, backend_pid: number }>(query)
        const row = rows[0]
        if (row === undefined) throw new Error('the database meter read no row')
        return { walBytes: Number(row.wal_bytes), statements: row.statements === null ? null : Number(row.statements), backendPid: row.backend_pid }
      },
      async close () { await client.end() },
    }
  } catch (err) {
    await client.end().catch(() => {})
    throw err
  }
}
