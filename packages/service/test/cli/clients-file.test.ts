/**
 * `tollbooth clients apply FILE`: the clients of a clients file made what it lists, twice the same
 * changing nothing; a refused file changing nothing at all; the settings that go with it checked.
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { runClientsCommand } from '../../src/cli/clients-command.js'
import { loadConfig } from '../../src/config/index.js'
import { capturedCommand } from '../helpers/cli.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { serveEnv } from '../helpers/service.js'

async function clients (argv: string[], env: NodeJS.ProcessEnv): ReturnType<typeof capturedCommand> {
  return await capturedCommand(async (output) => await runClientsCommand(argv, { env, ...output }))
}

interface Applied { dryRun: boolean, added: string[], updated: string[], removed: string[], unchanged: string[] }

describe('`tollbooth clients apply`', () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-clients-'))
  const secret = randomBytes(32).toString('base64url')
  let db: TestDatabase
  let env: NodeJS.ProcessEnv
  let count = 0
  /** A clients file with these entries; each call a new file, as an operator edits one. */
  const writeFile = (entries: unknown): string => {
    const file = path.join(folder, `clients-${count++}.json`)
    fs.writeFileSync(file, typeof entries === 'string' ? entries : JSON.stringify({ clients: entries }))
    return file
  }
  const apply = async (file: string, ...flags: string[]): Promise<Applied> => {
    const applied = await clients(['apply', file, '--json', ...flags], env)
    assert.equal(applied.status, 0, applied.stderr)
    return JSON.parse(applied.stdout) as Applied
  }
  const stored = async (): Promise<Array<{ client_id: string, source: string, metadata: Record<string, unknown>, secret_hash: Buffer | null }>> =>
    (await db.pool.query<{ client_id: string, source: string, metadata: Record<string, unknown>, secret_hash: Buffer | null }>('SELECT client_id, source, metadata, secret_hash FROM oidc_clients ORDER BY client_id')).rows
  const web = { client_id: 'web', client_name: 'Web', redirect_uris: ['https://web.example.com/cb'], client_secret: secret }
  const spa = { client_id: 'spa', redirect_uris: ['https://spa.example.com/cb'], token_endpoint_auth_method: 'none', tollbooth_first_party: true }
  const api = { client_id: 'api', redirect_uris: ['https://api.example.com/cb'], client_secret_sha256: createHash('sha256').update(secret).digest('hex') }

  before(async () => {
    db = await createTestDatabase()
    env = serveEnv(db.url)
  })
  after(async () => {
    await db.drop()
    fs.rmSync(folder, { recursive: true, force: true })
  })

  it('adds the file\'s clients, storing only secrets\' SHA-256; applying it again changes nothing', async () => {
    assert.equal((await clients(['add', '--id', 'by-hand', '--redirect-uri', 'https://hand.example.com/cb'], env)).status, 0)
    const file = writeFile([web, spa, api])
    assert.deepEqual(await apply(file), { dryRun: false, added: ['web', 'spa', 'api'], updated: [], removed: [], unchanged: [] })
    const rows = await stored()
    assert.deepEqual(rows.map((row) => [row.client_id, row.source]), [['api', 'file'], ['by-hand', 'cli'], ['spa', 'file'], ['web', 'file']])
    const hash = createHash('sha256').update(secret).digest()
    assert.deepEqual(rows.find((row) => row.client_id === 'web')?.secret_hash, hash)
    assert.deepEqual(rows.find((row) => row.client_id === 'api')?.secret_hash, hash)
    assert.equal(rows.find((row) => row.client_id === 'spa')?.secret_hash, null)
    assert.ok(!JSON.stringify(rows).includes(secret), 'the secret is stored nowhere')
    assert.deepEqual(await apply(file), { dryRun: false, added: [], updated: [], removed: [], unchanged: ['web', 'spa', 'api'] })
    assert.deepEqual(await stored(), rows)
    const listed = await clients(['list'], env)
    assert.match(listed.stdout, /^web {2}file {2}client_secret_basic {2}https:\/\/web\.example\.com\/cb$/m)
    assert.match(listed.stdout, /^by-hand {2}cli /m)
  })

  it('updates what changed and removes what the file no longer lists, never a client added by hand; --dry-run changes nothing', async () => {
    const changed = writeFile([{ ...web, redirect_uris: ['https://web.example.com/callback'] }, spa])
    const before = await stored()
    const dry = await clients(['apply', changed, '--dry-run'], env)
    assert.equal(dry.status, 0, dry.stderr)
    assert.equal(dry.stdout, 'would be updated: web\nwould be removed: api\nunchanged: 1\n')
    assert.deepEqual(await stored(), before, 'a dry run wrote nothing')
    assert.deepEqual(await apply(changed), { dryRun: false, added: [], updated: ['web'], removed: ['api'], unchanged: ['spa'] })
    const rows = await stored()
    assert.deepEqual(rows.map((row) => row.client_id), ['by-hand', 'spa', 'web'])
    assert.deepEqual(rows.find((row) => row.client_id === 'web')?.metadata.redirect_uris, ['https://web.example.com/callback'])
    assert.deepEqual(await apply(writeFile([])), { dryRun: false, added: [], updated: [], removed: ['spa', 'web'], unchanged: [] })
    assert.deepEqual((await stored()).map((row) => row.client_id), ['by-hand'])
  })

  it('refuses a file that does not parse, a client it gets wrong, or one that takes another\'s id, and writes nothing', async () => {
    await apply(writeFile([web]))
    const before = await stored()
    for (const [contents, pattern] of [
      ['{"clients": [', /clients file .*JSON/],
      [[{ ...web, redirect_uri: 'https://web.example.com/cb' }], /Unexpected property/],
      [[{ ...spa, client_id: 'a b' }], /client_id/],
      [[{ ...web, client_secret: 'short' }], /client_secret/],
      [[{ ...web, client_secret: undefined }], /client "web" \(entry 1\): client_secret_basic needs exactly one of client_secret and client_secret_sha256/],
      [[{ ...spa, client_secret: secret }], /client "spa" \(entry 1\): none takes no secret/],
      [[web, { ...web, client_name: 'Again' }], /client "web" is listed twice/],
      [[spa, { ...web, redirect_uris: ['https://web.example.com/cb#fragment'] }], /client "web": its metadata is refused: .*redirect_uris/],
      [[{ ...web, client_id: 'by-hand' }], /client "by-hand" was registered with `tollbooth clients add`/],
    ] as const) {
      const refused = await clients(['apply', writeFile(contents)], env)
      assert.equal(refused.status, 2, `${JSON.stringify(contents)}: ${refused.stdout}`)
      assert.match(refused.stderr, pattern)
      assert.ok(!refused.stderr.includes(secret), 'a refusal never repeats a secret')
      assert.deepEqual(await stored(), before, `${JSON.stringify(contents)}: nothing written`)
    }
    const missing = await clients(['apply', path.join(folder, 'none.json')], env)
    assert.equal(missing.status, 2)
    assert.match(missing.stderr, /ENOENT/)
  })

  it('the clients file and dynamic registration need the provider on, and a token mode needs a long token', () => {
    const refusedWith = (settings: NodeJS.ProcessEnv, pattern: RegExp): void => {
      assert.throws(() => loadConfig({ env: { TOLLBOOTH_JWT_ALGORITHM: 'EdDSA', ...settings } }), (err: unknown) => (err as { code?: string }).code === 'CONFIG_INVALID' && pattern.test((err as Error).message))
    }
    refusedWith({ TOLLBOOTH_OIDC_CLIENTS_FILE: 'clients.json' }, /TOLLBOOTH_OIDC_CLIENTS_FILE needs TOLLBOOTH_OIDC=true/)
    refusedWith({ TOLLBOOTH_OIDC_REGISTRATION: 'open' }, /TOLLBOOTH_OIDC_REGISTRATION needs TOLLBOOTH_OIDC=true/)
    refusedWith({ TOLLBOOTH_OIDC: 'true', TOLLBOOTH_OIDC_REGISTRATION: 'token' }, /at least 32 characters/)
    refusedWith({ TOLLBOOTH_OIDC: 'true', TOLLBOOTH_OIDC_REGISTRATION: 'token', TOLLBOOTH_OIDC_REGISTRATION_TOKEN: 'short' }, /at least 32 characters/)
    refusedWith({ TOLLBOOTH_OIDC: 'true', TOLLBOOTH_OIDC_REGISTRATION_TOKEN: secret }, /goes with TOLLBOOTH_OIDC_REGISTRATION=token/)
    assert.equal(loadConfig({ env: { TOLLBOOTH_OIDC: 'true', TOLLBOOTH_JWT_ALGORITHM: 'EdDSA', TOLLBOOTH_OIDC_REGISTRATION: 'token', TOLLBOOTH_OIDC_REGISTRATION_TOKEN: secret } }).oidcRegistration, 'token')
  })
})
