import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { isLoopbackHost, loadConfig, settings } from '../../src/config/index.js'
import { packageRoot } from '../../src/paths.js'
import { jwtSecretOf } from '../../src/process/start.js'

const kek = 'ab'.repeat(32)
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-secrets-'))
after(() => { fs.rmSync(scratch, { recursive: true, force: true }) })

function isConfigInvalid (message: RegExp): (err: { code?: string, message: string }) => boolean {
  return (err) => err.code === 'CONFIG_INVALID' && message.test(err.message)
}

describe('secrets come from the environment or a _FILE, never a flag', () => {
  it('declares DATABASE_URL, TOLLBOOTH_JWT_SECRET and TOLLBOOTH_KEY_ENCRYPTION_KEY as secrets', () => {
    const secrets = settings.filter((s) => s.secret === true).map((s) => s.env)
    for (const name of ['DATABASE_URL', 'TOLLBOOTH_JWT_SECRET', 'TOLLBOOTH_KEY_ENCRYPTION_KEY']) assert.ok(secrets.includes(name), name)
  })

  it('refuses each secret given as a flag, saying to use the environment or the file', () => {
    const cases: Array<[string, string, string]> = [
      ['--jwt-secret', 'x'.repeat(40), 'TOLLBOOTH_JWT_SECRET'],
      ['--database-url', 'postgres://u:p@127.0.0.1/db', 'DATABASE_URL'],
      ['--key-encryption-key', kek, 'TOLLBOOTH_KEY_ENCRYPTION_KEY'],
    ]
    for (const [flag, value, env] of cases) {
      assert.throws(() => loadConfig({ env: {}, argv: [flag, value] }), (err: { code?: string, message: string, field?: string }) => {
        assert.equal(err.code, 'CONFIG_INVALID')
        assert.equal(err.field, env)
        assert.match(err.message, new RegExp(`${flag} is refused.*Set ${env} in the environment, or ${env}_FILE`))
        assert.ok(!err.message.includes(value), 'the refusal does not echo the secret')
        return true
      })
    }
  })

  it('reads a secret once from <NAME>_FILE, dropping one trailing newline', () => {
    const file = path.join(scratch, 'jwt-secret')
    fs.writeFileSync(file, 's'.repeat(40) + '\n', { mode: 0o600 })
    const kekFile = path.join(scratch, 'kek')
    fs.writeFileSync(kekFile, kek + '\n', { mode: 0o600 })
    const urlFile = path.join(scratch, 'database-url')
    fs.writeFileSync(urlFile, 'postgres://u:p@127.0.0.1/db')
    const config = loadConfig({ env: { TOLLBOOTH_JWT_SECRET_FILE: file, TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE: kekFile, DATABASE_URL_FILE: urlFile, TOLLBOOTH_PUBLIC_URL: 'https://app.example.com' } })
    assert.equal(config.jwtSecret, 's'.repeat(40))
    assert.equal(config.keyEncryptionKey, kek)
    assert.equal(config.databaseUrl, 'postgres://u:p@127.0.0.1/db')
  })

  it('refuses a secret set both ways, an unreadable file and an empty one', () => {
    const empty = path.join(scratch, 'empty')
    fs.writeFileSync(empty, '\n')
    assert.throws(() => loadConfig({ env: { TOLLBOOTH_KEY_ENCRYPTION_KEY: kek, TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE: empty } }), isConfigInvalid(/TOLLBOOTH_KEY_ENCRYPTION_KEY or TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE, not both/))
    assert.throws(() => loadConfig({ env: { TOLLBOOTH_JWT_SECRET_FILE: path.join(scratch, 'missing') } }), isConfigInvalid(/cannot read TOLLBOOTH_JWT_SECRET_FILE .*ENOENT/))
    assert.throws(() => loadConfig({ env: { TOLLBOOTH_JWT_SECRET_FILE: empty } }), isConfigInvalid(/TOLLBOOTH_JWT_SECRET_FILE .* is empty/))
  })

  it('`tollbooth serve --jwt-secret` and `tollbooth migrate --database-url` stop with exit code 2 and the reason', () => {
    const bin = path.join(packageRoot, 'bin', 'tollbooth.js')
    const serve = spawnSync(process.execPath, [bin, 'serve', '--jwt-secret', 'x'.repeat(40)], { encoding: 'utf8', env: { PATH: process.env.PATH } })
    assert.equal(serve.status, 2)
    assert.match(serve.stderr, /invalid configuration: --jwt-secret is refused/)
    const migrate = spawnSync(process.execPath, [bin, 'migrate', '--database-url', 'postgres://u:p@127.0.0.1/db'], { encoding: 'utf8', env: { PATH: process.env.PATH } })
    assert.equal(migrate.status, 2)
    assert.match(migrate.stderr, /--database-url is refused.*DATABASE_URL_FILE/)
    assert.ok(!migrate.stderr.includes('u:p@'), 'the refusal does not echo the URL')
  })
})

describe('loopback addresses', () => {
  it('are 127.0.0.0/8, ::1 (also IPv4-mapped) and the name localhost', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1']) assert.equal(isLoopbackHost(host), true, host)
    for (const host of ['0.0.0.0', '::', '192.0.2.10', 'example.com', '::ffff:10.0.0.1']) assert.equal(isLoopbackHost(host), false, host)
  })
})

describe('mail links in the log only in development', () => {
  const deployed = { DATABASE_URL: 'postgres://u:p@db.internal/tollbooth', TOLLBOOTH_KEY_ENCRYPTION_KEY: kek, TOLLBOOTH_PUBLIC_URL: 'https://app.example.com' }

  it('logs them with the embedded database and not with DATABASE_URL, unless TOLLBOOTH_MAIL_LOG_LINKS says otherwise', () => {
    assert.equal(loadConfig({ env: {} }).mailLogLinks, true)
    assert.equal(loadConfig({ env: deployed }).mailLogLinks, false)
    assert.equal(loadConfig({ env: { ...deployed, TOLLBOOTH_MAIL_LOG_LINKS: 'true' } }).mailLogLinks, true)
    assert.equal(loadConfig({ env: { TOLLBOOTH_MAIL_LOG_LINKS: 'false' } }).mailLogLinks, false)
    assert.equal(loadConfig({ env: deployed, argv: ['--mail-log-links'] }).mailLogLinks, true)
    assert.equal(loadConfig({ env: {}, overrides: { databaseUrl: deployed.DATABASE_URL, keyEncryptionKey: kek, publicUrl: deployed.TOLLBOOTH_PUBLIC_URL } }).mailLogLinks, false)
  })
})

describe('the JWT secret kept in the data folder', () => {
  it('is made once for HS256 on the embedded database only; EdDSA and DATABASE_URL write nothing', () => {
    const dataDir = path.join(scratch, 'jwt-data')
    assert.equal(jwtSecretOf({ jwtSecret: undefined, jwtAlgorithm: 'EdDSA', databaseUrl: undefined, dataDir }), undefined)
    assert.equal(jwtSecretOf({ jwtSecret: undefined, jwtAlgorithm: 'HS256', databaseUrl: 'postgres://u@db/tollbooth', dataDir }), undefined)
    assert.equal(fs.existsSync(dataDir), false, 'nothing written yet')
    const made = jwtSecretOf({ jwtSecret: undefined, jwtAlgorithm: 'HS256', databaseUrl: undefined, dataDir })
    assert.ok(made !== undefined && made.length >= 32)
    assert.equal((fs.statSync(path.join(dataDir, 'jwt-secret')).mode & 0o777), 0o600)
    assert.equal(jwtSecretOf({ jwtSecret: undefined, jwtAlgorithm: 'HS256', databaseUrl: undefined, dataDir }), made, 'kept for the next start')
    assert.equal(jwtSecretOf({ jwtSecret: 'x'.repeat(40), jwtAlgorithm: 'HS256', databaseUrl: undefined, dataDir }), 'x'.repeat(40), 'a configured one wins')
  })
})
