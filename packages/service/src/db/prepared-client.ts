/**
 * pg's Client, with every query that has parameters sent as a named prepared statement: parsed
 * and planned by PostgreSQL once per connection, then only bound and executed. pg sends a
 * query with parameters through an unnamed statement, which PostgreSQL parses and plans again
 * each time. For the service's short queries that was half of PostgreSQL's work: a closed loop
 * of `GET /api/v1/me` (bench/README, "Prepared statements") cost PostgreSQL 48 µs of CPU a
 * request unnamed and 25 named.
 *
 * The name is the text's: the same text gets the same name in this process, on any connection
 * (each connection prepares it at its first use). The service's statements are constants or a
 * few variants of one, so names are few; past `maxNamedStatements` distinct texts the rest go
 * unnamed, so SQL built from data could never grow every backend's memory without end.
 * Statements without parameters (BEGIN, COMMIT, migrations of several statements) are sent as
 * they are, through the simple protocol.
 *
 * A statement keeps the plan's result columns: after a migration changes the type of a column
 * it returns (or, with `*`, the table's columns), it fails ("cached plan must not change result
 * type", 0A000) on connections prepared before, until they close: a transaction that meets it
 * closes its connection (pool.ts, `withTransaction`), and pg-pool closes the connection of any
 * query that failed. The service's statements name their columns.
 *
 * A connection pooler in transaction mode must keep named statements per server connection
 * (PgBouncer 1.21 or later with `max_prepared_statements` set); behind one that does not,
 * TOLLBOOTH_DB_STATEMENTS=unnamed sends every query unnamed, as pg does.
 */
import pg from 'pg'

/** Distinct statement texts named at most, per process. */
export const maxNamedStatements = 500

const names = new Map<string, string>()

/** The name of `text`'s prepared statement; undefined once `maxNamedStatements` texts have names. */
export function statementName (text: string): string | undefined {
  let name = names.get(text)
  if (name === undefined && names.size < maxNamedStatements) names.set(text, name = `tollbooth_${names.size + 1}`)
  return name
}

/** pg's Client; its `query` names the statements of queries with parameters (`statementName`). */
export class PreparingClient extends pg.Client {}

const unnamedQuery = pg.Client.prototype.query

/** What pg keeps of a connection's statements (not in its type definitions). */
interface ParsedStatements { connection?: { parsedStatements?: Record<string, string> } }

/**
 * After a named query failed: if the statement may be gone from the server while pg still
 * takes it for prepared, pg is told to prepare it again at its next use. Gone when PostgreSQL
 * says so (26000), and when the failure was pg's own before the server answered: a value it
 * could not turn into a parameter makes it close the statement (its Bind never sent), and every
 * later use failed with 26000 on that connection.
 */
function forgetIfGone (client: pg.Client, name: string, err: unknown): void {
  const { code, severity } = (err ?? {}) as { code?: unknown, severity?: unknown }
  if (code !== '26000' && severity !== undefined) return
  const parsed = (client as unknown as ParsedStatements).connection?.parsedStatements
  if (parsed !== undefined) delete parsed[name]
}

// Set on the prototype rather than overridden in the class: TypeScript cannot check one method
// against pg's overloads of `query`. The arguments are passed on as they came, but the first
// (and a callback, wrapped).
PreparingClient.prototype.query = function (this: pg.Client, ...args: unknown[]): unknown {
  const [text, values, callback] = args
  if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0) return Reflect.apply(unnamedQuery, this, args)
  const name = statementName(text)
  if (name === undefined) return Reflect.apply(unnamedQuery, this, args)
  // The values stay where they were: pg reads them, or a callback, from the second argument.
  args[0] = { name, text }
  if (typeof callback === 'function') {
    args[2] = (err: unknown, result: unknown) => {
      if (err !== null && err !== undefined) forgetIfGone(this, name, err)
      Reflect.apply(callback, undefined, [err, result])
    }
    return Reflect.apply(unnamedQuery, this, args)
  }
  return (Reflect.apply(unnamedQuery, this, args) as Promise<unknown>).catch((err: unknown) => {
    forgetIfGone(this, name, err)
    throw err
  })
} as pg.Client['query']
