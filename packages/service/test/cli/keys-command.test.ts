import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { decodeProtectedHeader } from 'jose'
import { scratchClusterDir } from '../../src/db/embedded/embedded.js'
import { startServe } from '../../src/launcher/index.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { embeddedServeEnv, registerUser, request, serveEnv, testJwtSecret } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'
import { keysCommand, runKeys, type ListedKeyJson } from '../keys/keys-cli.js'

const secondsApart = (from: string, to: string): number => (Date.parse(to) - Date.parse(from)) / 1000

/** `tollbooth keys list --json`, parsed (in this process). */
async function listedKeys (env: NodeJS.ProcessEnv): Promise<ListedKeyJson[]> {
  const run = await keysCommand(['list', '--json'], env)
  assert.equal(run.status, 0, run.stderr)
  return (JSON.parse(run.stdout) as { keys: ListedKeyJson[] }).keys
}

describe('`tollbooth keys` with DATABASE_URL', () => {
  let db: TestDatabase
  let env: NodeJS.ProcessEnv
  before(async () => {
    db = await createTestDatabase()
    env = serveEnv(db.url)
  })
  after(async () => { await db.drop() })

  it('list says when there is no key yet; rotate prints the key it creates, signing at once with --now, else after the publication delay', async () => {
    const empty = await keysCommand(['list'], env)
    assert.equal(empty.status, 0, empty.stderr)
    assert.match(empty.stdout, /no signing key yet/)

    const first = await keysCommand(['rotate', '--now', '--json'], env)
    assert.equal(first.status, 0, first.stderr)
    const { created: signing } = JSON.parse(first.stdout) as { created: ListedKeyJson }
    assert.equal(signing.state, 'signing')
    assert.equal(signing.alg, 'EdDSA')
    assert.equal(signing.activatesAt, signing.createdAt)

    const next = await keysCommand(['rotate'], env)
    assert.equal(next.status, 0, next.stderr)
    const printed = /^created key (\S+) \(EdDSA\): published now, it signs from \S+ \(in 360 s\)/.exec(next.stdout)
    assert.ok(printed !== null, next.stdout)
    const nextKid = printed[1] ?? ''

    const keys = await listedKeys(env)
    assert.deepEqual(keys.map((key) => [key.kid, key.state]), [[signing.kid, 'signing'], [nextKid, 'published']])
    const published = keys[1]
    assert.ok(published !== undefined)
    assert.equal(secondsApart(published.createdAt, published.activatesAt), 60 + 300, 'a reload interval and the JWK Set\'s cache lifetime, as the service\'s own rotation')
    assert.equal(published.retiredAt, null)

    const table = await keysCommand(['list'], env)
    assert.equal(table.status, 0, table.stderr)
    const lines = table.stdout.split('\n')
    assert.match(lines[0] ?? '', /^\s+kid\s+alg\s+created\s+activates\s+retired\s+state$/)
    assert.match(lines.find((line) => line.includes(signing.kid)) ?? '', /^\*\s+\S+\s+EdDSA\s+\S+Z\s+\S+Z\s+-\s+signing$/, 'the key that signs now is marked')
    assert.match(lines.find((line) => line.includes(nextKid)) ?? '', /^\s+\S+\s+EdDSA\s+\S+Z\s+\S+Z\s+-\s+published$/)
  })

  it('retire: a key that does not sign is retired alone; the key that signs is replaced, signing at once, in the same step', async () => {
    const before = await listedKeys(env)
    const published = before.find((key) => key.state === 'published')
    const signing = before.find((key) => key.state === 'signing')
    assert.ok(published !== undefined && signing !== undefined)

    const alone = await keysCommand(['retire', published.kid], env)
    assert.equal(alone.status, 0, alone.stderr)
    assert.match(alone.stdout, new RegExp(`^retired key ${published.kid}: every replica stops signing and verifying with it within a second`))
    assert.doesNotMatch(alone.stdout, /created key/)

    const replaced = await keysCommand(['retire', signing.kid], env)
    assert.equal(replaced.status, 0, replaced.stderr)
    const created = /created key (\S+) \(EdDSA\) in its place, as it was the key that signed: it signs now/.exec(replaced.stdout)
    assert.ok(created !== null, replaced.stdout)

    const after = await listedKeys(env)
    assert.deepEqual(after.filter((key) => key.state !== 'retired').map((key) => [key.kid, key.state]), [[created[1], 'signing']])
    for (const kid of [published.kid, signing.kid]) assert.ok(after.find((key) => key.kid === kid)?.retiredAt !== null, `${kid} has its retirement time`)

    const again = await keysCommand(['retire', signing.kid, '--json'], env)
    assert.equal(again.status, 0, again.stderr)
    const answer = JSON.parse(again.stdout) as { retired: ListedKeyJson, alreadyRetired: boolean, created: unknown }
    assert.equal(answer.alreadyRetired, true)
    assert.equal(answer.created, null)
    assert.equal(answer.retired.kid, signing.kid)
    assert.deepEqual(await listedKeys(env), after, 'retiring a retired key changes nothing')
  })

  it('refuses an unknown kid, HS256, key files, a missing or another key-encryption key, and a database it cannot reach, changing nothing', async () => {
    const keys = await listedKeys(env)

    const unknown = await keysCommand(['retire', 'no-such-kid'], env)
    assert.equal(unknown.status, 1)
    assert.match(unknown.stderr, /no signing key has the kid "no-such-kid" \(tollbooth keys list shows them\)/)
    // A thumbprint may begin with '-': it is a kid, not an option, with or without '--'.
    for (const args of [['retire', '-w-no-such-kid'], ['retire', '--json', '-w-no-such-kid'], ['retire', '--', '-w-no-such-kid']]) {
      const dashed = await keysCommand(args, env)
      assert.equal(dashed.status, 1, `tollbooth keys ${args.join(' ')}: ${dashed.stderr}`)
      assert.match(dashed.stderr, /no signing key has the kid "-w-no-such-kid"/)
    }

    for (const command of [['list'], ['rotate'], ['retire', keys[0]?.kid ?? '']]) {
      const hs256 = await keysCommand(command, { ...env, TOLLBOOTH_JWT_ALGORITHM: 'HS256', TOLLBOOTH_JWT_SECRET: testJwtSecret })
      assert.equal(hs256.status, 2, `${command[0] ?? ''} under HS256`)
      assert.match(hs256.stderr, /TOLLBOOTH_JWT_ALGORITHM is HS256: access tokens are signed with the shared secret/)
    }

    const keyFile = await keysCommand(['rotate'], { ...env, TOLLBOOTH_SIGNING_KEY_FILE: '/etc/tollbooth/signing.pem' })
    assert.equal(keyFile.status, 2)
    assert.match(keyFile.stderr, /the signing key is the file TOLLBOOTH_SIGNING_KEY_FILE \(\/etc\/tollbooth\/signing.pem\), not a stored key: rotate it by a rolling restart/)

    const withoutKek = { ...env }
    delete withoutKek.TOLLBOOTH_KEY_ENCRYPTION_KEY
    for (const command of [['rotate'], ['retire', keys[0]?.kid ?? '']]) {
      const missing = await keysCommand(command, withoutKek)
      assert.equal(missing.status, 2)
      assert.match(missing.stderr, /TOLLBOOTH_KEY_ENCRYPTION_KEY \(or TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE\) is required/)
    }

    const anotherKek = await keysCommand(['rotate', '--now'], { ...env, TOLLBOOTH_KEY_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64') })
    assert.equal(anotherKek.status, 1)
    assert.match(anotherKek.stderr, /does not open with the configured key-encryption key.*Nothing was changed/)

    const closedPort = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo
        server.close(() => { resolve(port) })
      })
    })
    const unreachable = await keysCommand(['list'], { ...env, DATABASE_URL: `postgres://nobody:secret@127.0.0.1:${closedPort}/nothing` })
    assert.equal(unreachable.status, 1)
    assert.match(unreachable.stderr, /cannot reach the database at DATABASE_URL/)

    assert.deepEqual(await listedKeys(env), keys)
  })

  it('is the `keys` command of the tollbooth executable, with its exit codes', async () => {
    const listed = await runKeys(['list', '--json'], env)
    assert.equal(listed.status, 0, listed.stderr)
    assert.deepEqual((JSON.parse(listed.stdout) as { keys: ListedKeyJson[] }).keys, await listedKeys(env))
    const unknown = await runKeys(['retire', 'no-such-kid'], env)
    assert.equal(unknown.status, 1)
    assert.match(unknown.stderr, /^tollbooth keys: no signing key has the kid "no-such-kid"/)
    const usage = await runKeys([], env)
    assert.equal(usage.status, 2)
    assert.match(usage.stderr, /Usage:/)
  })

  it('refuses a wrong command line with the usage and exit code 2', async () => {
    for (const args of [[], ['frobnicate'], ['retire'], ['list', 'extra'], ['list', '--now'], ['rotate', '--later']]) {
      const run = await keysCommand(args, env)
      assert.equal(run.status, 2, `tollbooth keys ${args.join(' ')}`)
      assert.match(run.stderr, /Usage:\n {2}tollbooth keys list/)
    }
    const help = await keysCommand(['--help'], env)
    assert.equal(help.status, 0)
    assert.match(help.stdout, /tollbooth keys retire KID/)
  })
})

describe('`tollbooth keys` beside a service on the embedded database (no DATABASE_URL)', () => {
  const dataDir = path.dirname(scratchClusterDir('keys-cli'))
  const env = embeddedServeEnv(dataDir)
  after(() => { fs.rmSync(dataDir, { recursive: true, force: true }) })

  it('explains that it needs the service running when none runs from the data folder', async () => {
    const run = await runKeys(['list'], env)
    assert.equal(run.status, 1)
    assert.match(run.stderr, /no DATABASE_URL, and no embedded PostgreSQL is running from .* \(TOLLBOOTH_DATA_DIR\): start the service from that folder/)
  })

  it('lists and retires the keys of the running service, with the key-encryption key of its data folder', async () => {
    const service = await startServe({ env })
    try {
      const { body, email, password } = await registerUser(service)
      const token = body.accessToken as string
      const kid = String(decodeProtectedHeader(token).kid)
      assert.deepEqual((await listedKeys(env)).map((key) => [key.kid, key.state]), [[kid, 'signing']])

      const retired = await runKeys(['retire', kid, '--json'], env)
      assert.equal(retired.status, 0, retired.stderr)
      const { created } = JSON.parse(retired.stdout) as { created: ListedKeyJson }
      await waitFor('the service to refuse the retired key\'s token', async () => (await request(service, 'GET', '/api/v1/me', { token })).status === 401)
      const login = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
      assert.equal(login.status, 200)
      assert.equal(decodeProtectedHeader(login.body.accessToken as string).kid, created.kid)
    } finally {
      await service.stop()
    }
    const stopped = await runKeys(['list'], env)
    assert.equal(stopped.status, 1)
    assert.match(stopped.stderr, /no embedded PostgreSQL is running from|cannot reach the embedded PostgreSQL/)
  })
})
