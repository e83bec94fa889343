/**
 * A fresh, empty database on the PostgreSQL server of the test run (`npm test` starts one
 * and passes it in TOLLBOOTH_TEST_ADMIN_DATABASE_URL), for services the lab's tests start:
 * the service migrates it itself at start.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'

export interface TestDatabase {
  url: string
  drop (): Promise<void>
}

function adminDatabaseUrl (): string {
  const url = process.env.TOLLBOOTH_TEST_ADMIN_DATABASE_URL ?? process.env.DATABASE_URL
  if (url === undefined || url === '') throw new Error('run the tests with `npm test` (it starts PostgreSQL), or set DATABASE_URL')
  return url
}

async function asAdmin (sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminDatabaseUrl() })
  await admin.connect()
  try {
    await admin.query(sql)
  } finally {
    await admin.end()
  }
}

export async function createTestDatabase (): Promise<TestDatabase> {
  const name = `tb_lab_${randomBytes(6).toString('hex')}`
  await asAdmin(`CREATE DATABASE ${name}`)
  const url = new URL(adminDatabaseUrl())
  url.pathname = `/${name}`
  let dropped = false
  return {
    url: url.toString(),
    async drop () {
      if (dropped) return
      dropped = true
      await asAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    },
  }
}
