/**
 * pg's Client, with every query that has parameters sent as a named prepared statement, planned
 * once per connection: pg's unnamed statements are planned each time, much of PostgreSQL's work
 * for short queries. Past `maxNamedStatements` texts the rest go unnamed, so SQL built from data
 * cannot grow every backend's memory. A statement fails with 0A000 after a migration changes a
 * column it returns, and its connection is closed (pool.ts). Behind a pooler in transaction mode
 * without `max_prepared_statements` (PgBouncer 1.21+), set TOLLBOOTH_DB_STATEMENTS=unnamed.
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
 * After a named query failed: if the statement may be gone from the server while pg still takes
 * it for prepared, pg is told to prepare it again at its next use. Gone when PostgreSQL says so
 * (26000), and when pg failed before the server answered (a value it could not serialise closes
 * the statement, and every later use would fail with 26000).
 */
function forgetIfGone (client: pg.Client, name: string, err: unknown): void {
  const { code, severity } = (err ?? {}) as { code?: unknown, severity?: unknown }
  if (code !== '26000' && severity !== undefined) return
  const parsed = (client as unknown as ParsedStatements).connection?.parsedStatements
  if (parsed !== undefined) delete parsed[name]
}

// On the prototype: TypeScript cannot check one method against pg's overloads of `query`.
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
