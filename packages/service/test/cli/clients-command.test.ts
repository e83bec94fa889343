/** `tollbooth clients add | list | remove`: what is stored (a secret's SHA-256, never the secret) and what is refused. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { runClientsCommand } from '../../src/cli/clients-command.js'
import { loadConfig } from '../../src/config/index.js'
import { capturedCommand } from '../helpers/cli.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { serveEnv } from '../helpers/service.js'

async function clients (argv: string[], env: NodeJS.ProcessEnv): ReturnType<typeof capturedCommand> {
  return await capturedCommand(async (output) => await runClientsCommand(argv, { env, ...output }))
}

describe('`tollbooth clients`', () => {
  let db: TestDatabase
  let env: NodeJS.ProcessEnv
  before(async () => {
    db = await createTestDatabase()
    env = serveEnv(db.url)
  })
  after(async () => { await db.drop() })

  it('adds a confidential client, prints its secret once and stores only its SHA-256', async () => {
    const added = await clients(['add', '--id', 'web-app', '--name', 'Web app', '--redirect-uri', 'https://app.example.com/callback', '--json'], env)
    assert.equal(added.status, 0, added.stderr)
    const { clientId, clientSecret } = JSON.parse(added.stdout) as { clientId: string, clientSecret: string }
    assert.equal(clientId, 'web-app')
    assert.match(clientSecret, /^[A-Za-z0-9_-]{43}$/)
    const { rows } = await db.pool.query<{ secret_hash: Buffer, metadata: Record<string, unknown> }>('SELECT secret_hash, metadata FROM oidc_clients WHERE client_id = $1', ['web-app'])
    assert.deepEqual(rows[0]?.secret_hash, createHash('sha256').update(clientSecret).digest())
    assert.ok(!JSON.stringify(rows[0]?.metadata).includes(clientSecret), 'the secret is nowhere in the metadata')
    const listed = await clients(['list', '--json'], env)
    assert.equal(listed.status, 0, listed.stderr)
    assert.ok(!listed.stdout.includes(clientSecret))
    assert.deepEqual((JSON.parse(listed.stdout) as { clients: Array<{ clientId: string, redirect_uris: string[] }> }).clients.map((client) => [client.clientId, client.redirect_uris]), [['web-app', ['https://app.example.com/callback']]])
  })

  it('adds a public client without a secret, and removes it', async () => {
    const added = await clients(['add', '--id', 'spa', '--auth', 'none', '--first-party', '--redirect-uri', 'http://127.0.0.1:8080/cb'], env)
    assert.equal(added.status, 0, added.stderr)
    assert.match(added.stdout, /client_id: spa\nno secret \(none\)/)
    assert.equal((await clients(['remove', 'spa'], env)).status, 0)
    const again = await clients(['remove', 'spa'], env)
    assert.equal(again.status, 1)
    assert.match(again.stderr, /no client has the id "spa"/)
  })

  it('refuses no redirect URI, a redirect URI with a fragment, a taken id and an unknown method', async () => {
    for (const [argv, pattern] of [
      [['add'], /at least one redirect URI/],
      [['add', '--redirect-uri', 'https://app.example.com/cb#frag'], /redirect_uris/],
      [['add', '--id', 'web-app', '--redirect-uri', 'https://app.example.com/other'], /already registered/],
      [['add', '--auth', 'client_secret_jwt', '--redirect-uri', 'https://app.example.com/cb'], /--auth must be one of/],
    ] as const) {
      const refused = await clients([...argv], env)
      assert.equal(refused.status, 2, `${argv.join(' ')}: ${refused.stderr}`)
      assert.match(refused.stderr, pattern)
    }
  })

  it('TOLLBOOTH_OIDC is refused with HS256: an ID token is never signed with the shared secret', () => {
    assert.throws(() => loadConfig({ env: { TOLLBOOTH_OIDC: 'true', TOLLBOOTH_JWT_ALGORITHM: 'HS256' } }), (err: unknown) => (err as { code?: string }).code === 'CONFIG_INVALID' && /TOLLBOOTH_OIDC/.test((err as Error).message))
  })
})
