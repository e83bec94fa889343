/**
 * The embedded database's least-privilege roles, both LOGIN with no superuser, CREATEDB,
 * CREATEROLE, REPLICATION or BYPASSRLS. `tollbooth_migrator` owns the service's database, its
 * `public` schema and everything in it: migrations run as it. `tollbooth_service`, which the
 * service connects as, reads and writes rows and can change no table (db/migrate.ts
 * `grantRuntimeRole`). The superuser (initdb's) is used only here, to create the roles and the
 * database. A data folder of an earlier version (objects owned by the superuser or by the
 * service role) is brought over on start: each object of the schema is given to the migration
 * role (REASSIGN OWNED cannot move the bootstrap superuser's objects).
 */
import type pg from 'pg'

export const migrationRoleName = 'tollbooth_migrator'
export const serviceRoleName = 'tollbooth_service'

/** Relations given to the role; an identity or serial sequence follows its table. */
const ownedRelationKinds: Record<string, string> = { r: 'TABLE', p: 'TABLE', v: 'VIEW', m: 'MATERIALIZED VIEW', S: 'SEQUENCE', f: 'FOREIGN TABLE' }

/** Creates `name` (or sets its password and attributes again): LOGIN and nothing more. */
async function loginRole (admin: pg.Client, name: string, password: string): Promise<void> {
  // Utility statements take no parameters; the password is random base64url, quoted all the same.
  const attributes = `LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD ${admin.escapeLiteral(password)}`
  const exists = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])
  await admin.query(`${exists.rowCount === 0 ? 'CREATE' : 'ALTER'} ROLE ${admin.escapeIdentifier(name)} ${attributes}`)
}

/**
 * With `admin` a superuser connection to the `postgres` database: both roles (created, or their
 * passwords and attributes set again), the database owned by the migration role, then, through
 * `connect()` (the superuser on that database), the schema and its objects. The runtime role's
 * grants follow the migrations (process/database.ts).
 */
export async function prepareServiceRoles (admin: pg.Client, passwords: { migration: string, service: string }, databaseName: string, connect: () => Promise<pg.Client>): Promise<void> {
  await loginRole(admin, migrationRoleName, passwords.migration)
  await loginRole(admin, serviceRoleName, passwords.service)
  const role = admin.escapeIdentifier(migrationRoleName)
  const database = admin.escapeIdentifier(databaseName)
  const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName])
  if (found.rowCount === 0) await admin.query(`CREATE DATABASE ${database} OWNER ${role}`)
  else await admin.query(`ALTER DATABASE ${database} OWNER TO ${role}`)

  const client = await connect()
  try {
    await client.connect()
    await client.query(`ALTER SCHEMA public OWNER TO ${role}`)
    // Tables first: altering a table also moves the sequences its columns own.
    for (const kinds of [['r', 'p', 'v', 'm', 'f'], ['S']]) {
      const { rows } = await client.query<{ name: string, kind: string }>(
        `SELECT c.oid::regclass::text AS name, c.relkind AS kind FROM pg_class c
          WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = ANY($1) AND c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = $2)`,
        [kinds, migrationRoleName])
      for (const row of rows) await client.query(`ALTER ${ownedRelationKinds[row.kind] ?? 'TABLE'} ${row.name} OWNER TO ${role}`)
    }
    const { rows: routines } = await client.query<{ signature: string, kind: string }>(
      `SELECT p.oid::regprocedure::text AS signature, p.prokind AS kind FROM pg_proc p
        WHERE p.pronamespace = 'public'::regnamespace AND p.proowner <> (SELECT oid FROM pg_roles WHERE rolname = $1)`,
      [migrationRoleName])
    for (const routine of routines) await client.query(`ALTER ${routine.kind === 'p' ? 'PROCEDURE' : 'FUNCTION'} ${routine.signature} OWNER TO ${role}`)
    const { rows: types } = await client.query<{ name: string, kind: string }>(
      `SELECT t.oid::regtype::text AS name, t.typtype AS kind FROM pg_type t
        WHERE t.typnamespace = 'public'::regnamespace AND t.typtype IN ('e', 'd')
          AND t.typowner <> (SELECT oid FROM pg_roles WHERE rolname = $1)`,
      [migrationRoleName])
    for (const type of types) await client.query(`ALTER ${type.kind === 'd' ? 'DOMAIN' : 'TYPE'} ${type.name} OWNER TO ${role}`)
  } finally {
    await client.end().catch(() => {})
  }
}
