/**
 * What PostgreSQL has done so far, read from its statistics views on one connection kept open
 * for the purpose: the load lab reads it before and after a measured step, and divides the
 * difference by the logins the step served. Cumulative counters only; the reader's own
 * statements are left out of the statement count.
 */
import pg from 'pg'

export interface DatabaseActivity {
  /** The write-ahead log's position (`pg_current_wal_lsn()`) as bytes from 0/0: WAL written by the whole cluster. */
  walBytes: number
  /** WAL records so far (`pg_stat_wal`, PostgreSQL 14 and later); null where the view is missing. */
  walRecords: number | null
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
    const found = await client.query<{ statements: boolean, wal: boolean }>(
      `SELECT /* ${readerMark} */ to_regclass('pg_stat_statements') IS NOT NULL AS statements, to_regclass('pg_catalog.pg_stat_wal') IS NOT NULL AS wal`)
    const views = found.rows[0] ?? { statements: false, wal: false }
    const statements = views.statements
      ? `(SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%${readerMark}%')::text`
      : 'NULL'
    const walRecords = views.wal ? '(SELECT wal_records FROM pg_stat_wal)::text' : 'NULL'
    const query = `SELECT /* ${readerMark} */ (pg_current_wal_lsn() - '0/0')::text AS wal_bytes, ${walRecords} AS wal_records, ${statements} AS statements, pg_backend_pid() AS backend_pid`
    return {
      async read () {
        const { rows } = await client.query<{ wal_bytes: string, wal_records: string | null, statements: string | null, backend_pid: number }>(query)
        const row = rows[0]
        if (row === undefined) throw new Error('the database meter read no row')
        const count = (text: string | null): number | null => (text === null ? null : Number(text))
        return { walBytes: Number(row.wal_bytes), walRecords: count(row.wal_records), statements: count(row.statements), backendPid: row.backend_pid }
      },
      async close () { await client.end() },
    }
  } catch (err) {
    await client.end().catch(() => {})
    throw err
  }
}
