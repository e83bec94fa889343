/**
 * `tollbooth migrate`: applies the pending migrations to DATABASE_URL and exits, for a
 * deployment's migration step (a Kubernetes init container, compose's `migrate` service).
 * The service applies them at start too, under the same advisory lock (db/migrate.ts),
 * so replicas that start together never apply one twice; running them first makes a failing
 * migration a failed step that says so, rather than replicas that crash in a loop.
 * Least privilege: run it as the migration role (the schema's owner) with TOLLBOOTH_RUNTIME_ROLE
 * (or --runtime-role) naming the role `serve` connects as; that role is granted rows, never DDL.
 */
import { parseArgs } from 'node:util'
import { readSecret } from '../config/index.js'
import { grantRuntimeRole, migrate, createDatabasePool } from '../db/index.js'
import { isTollboothError } from '../errors.js'

export async function runMigrateCommand (argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let url: string | undefined
  let runtimeRole: string | undefined
  try {
    const { values } = parseArgs({ args: argv, options: { 'database-url': { type: 'string' }, 'runtime-role': { type: 'string' } }, strict: true, allowPositionals: false })
    // A secret never comes from a flag (ps shows it): the same refusal and DATABASE_URL_FILE as `serve`.
    url = readSecret('DATABASE_URL', env, values['database-url'])
    runtimeRole = values['runtime-role'] ?? (env.TOLLBOOTH_RUNTIME_ROLE === '' ? undefined : env.TOLLBOOTH_RUNTIME_ROLE)
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
    if (runtimeRole !== undefined) await grantRuntimeRole(pool, runtimeRole)
    process.stdout.write(`${JSON.stringify({ msg: applied.length === 0 ? 'migrations: nothing to apply' : 'migrations applied', applied, ...(runtimeRole === undefined ? {} : { runtimeRole }) })}\n`)
    return 0
  } catch (err) {
    if (isTollboothError(err, 'CONFIG_INVALID')) {
      process.stderr.write(`tollbooth migrate: ${err.message}\n`)
      return 1
    }
    // insufficient_privilege: run as a role that may not change the schema (the runtime role, say).
    if ((err as { code?: string }).code === '42501') {
      process.stderr.write(`tollbooth migrate: this database role may not change the schema (${(err as Error).message}): run it as the migration role, the schema's owner (docs/how-to/deploy.md)\n`)
      return 1
    }
    throw err
  } finally {
    await pool.end()
  }
}
