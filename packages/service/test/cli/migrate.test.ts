import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { describe, it } from 'node:test'
import { readMigrations } from '../../src/db/migrate.js'
import { packageRoot } from '../../src/paths.js'
import { createTestDatabase } from '../helpers/database.js'

const bin = path.join(packageRoot, 'bin', 'tollbooth.js')

function run (args: string[], env: NodeJS.ProcessEnv): { status: number | null, stdout: string, stderr: string } {
  const result = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe('`tollbooth migrate` (a deployment\'s migration step)', () => {
  it('applies every migration to an empty database once, then finds nothing to apply', async () => {
    const database = await createTestDatabase({ migrate: false })
    try {
      const env = { ...process.env, DATABASE_URL: database.url }
      const first = run(['migrate'], env)
      assert.equal(first.status, 0, first.stderr)
      assert.deepEqual(JSON.parse(first.stdout).applied, readMigrations().map((m) => m.name))
      const tables = await database.pool.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'users'")
      assert.equal(tables.rowCount, 1)
      const second = run(['migrate'], env)
      assert.equal(second.status, 0, second.stderr)
      assert.deepEqual(JSON.parse(second.stdout), { msg: 'migrations: nothing to apply', applied: [] })
    } finally {
      await database.drop()
    }
  })

  it('refuses to run without a database URL', () => {
    const env = { ...process.env }
    delete env.DATABASE_URL
    const result = run(['migrate'], env)
    assert.equal(result.status, 2)
    assert.match(result.stderr, /set DATABASE_URL/)
  })
})
