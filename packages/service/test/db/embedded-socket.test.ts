/**
 * The embedded PostgreSQL's connections: the service's through a Unix socket in the cluster's own
 * folder (cheaper for the event loop and the backend than the loopback's TCP stack), other
 * processes' through TCP on 127.0.0.1; TCP alone where the socket's path would be too long.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import pg from 'pg'
import { startEmbeddedPostgres } from '../../src/db/embedded/embedded.js'

/** The server's address as the connection sees it: null through a Unix socket. */
async function serverAddress (connectionString: string): Promise<string | null> {
  const client = new pg.Client({ connectionString })
  await client.connect()
  try {
    const { rows } = await client.query<{ addr: string | null }>('SELECT inet_server_addr()::text AS addr')
    return rows[0]?.addr ?? null
  } finally {
    await client.end()
  }
}

describe('the embedded database\'s connections', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-socket-'))
  after(() => { fs.rmSync(dataDir, { recursive: true, force: true }) })

  it('gives a URL through a Unix socket in the cluster\'s folder, and still listens on 127.0.0.1', async () => {
    const database = await startEmbeddedPostgres({ clusterDir: path.join(dataDir, 'pg'), nonDurable: true })
    try {
      const url = new URL(database.url)
      assert.equal(url.searchParams.get('host'), database.dataDir, 'the socket lives in the cluster\'s own folder')
      assert.ok(fs.statSync(path.join(database.dataDir, `.s.PGSQL.${database.port}`)).isSocket())
      assert.equal(await serverAddress(database.url), null, 'the URL connects through the socket')
      url.search = ''
      assert.match(await serverAddress(url.href) ?? '', /^127\.0\.0\.1(\/32)?$/, 'TCP still answers, for the other processes of the data folder')
    } finally {
      await database.stop()
    }
  })

  it('connects over TCP where the socket\'s path would pass the system\'s limit', async () => {
    const deep = path.join(dataDir, 'a-folder-name-long-enough'.repeat(4), 'pg')
    const database = await startEmbeddedPostgres({ clusterDir: deep, nonDurable: true })
    try {
      assert.ok(Buffer.byteLength(path.join(database.dataDir, `.s.PGSQL.${database.port}`)) > 107, 'the test\'s folder is deep enough')
      assert.equal(new URL(database.url).searchParams.get('host'), null)
      assert.match(await serverAddress(database.url) ?? '', /^127\.0\.0\.1(\/32)?$/)
    } finally {
      await database.stop()
    }
  })
})
