/**
 * `tollbooth migrate`: applies the pending migrations to DATABASE_URL and exits, for a
 * deployment's migration step (a Kubernetes init container, compose's `migrate` service).
 * The service applies them at start too, under the same advisory lock (db/migrate.ts),
 * so replicas that start together never apply one twice; running them first makes a failing
 * migration a failed step that says so, rather than replicas that crash in a loop.
 */
import { parseArgs } from 'node:util'
import { readSecret } from '../config/index.js'
import { migrate, createDatabasePool } from '../db/index.js'

export async function runMigrateCommand (argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let url: string | undefined
  try {
    const { values } = parseArgs({ args: argv, options: { 'database-url': { type: 'string' } }, strict: true, allowPositionals: false })
    // A secret never comes from a flag (ps shows it): the same refusal and DATABASE_URL_FILE as `serve`.
    url = readSecret('DATABASE_URL', env, values['database-url'])
  } catch (err) {
    process.stderr.write(`tollbooth migrate: ${(err as Error).message}\n`)
    return 2
  }
  if (url === undefined || !/^postgres(ql)?:\/\//.test(url)) {
    process.stderr.write('tollbooth migrate: set DATABASE_URL (or DATABASE_URL_FILE) to a postgres:// URL\n')
    return 2
  }
  const pool = createDatabasePool(url, 1, { acquireTimeoutMs: 10_000 })
  try {
    const applied = await migrate(pool)
    process.stdout.write(`${JSON.stringify({ msg: applied.length === 0 ? 'migrations: nothing to apply' : 'migrations applied', applied })}\n`)
    return 0
  } finally {
    await pool.end()
  }
}
