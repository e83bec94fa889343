import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { loadConfig, settings } from '../../src/config/index.js'
import { errorRegistry } from '../../src/errors.js'
import { packageRoot } from '../../src/paths.js'

// docs/ lives at the workspace root, two folders above this package.
const read = (file: string): string => fs.readFileSync(path.join(packageRoot, '..', '..', file), 'utf8')

describe('reference docs stay in step with the code', () => {
  it('docs/reference/config.md documents every setting in its tier\'s table, with its flag, default, choices and range', () => {
    const doc = read('docs/reference/config.md')
    const [, operatorTable = '', tuningTable = ''] = doc.split(/^## (?:Operator settings|Tuning)$/m)
    const tables = { operator: operatorTable, tuning: tuningTable }
    const operators = settings.filter((setting) => setting.tier === 'operator')
    assert.ok(operators.length <= 25, `${operators.length} operator settings: at most 25`)
    for (const setting of settings) {
      const row = tables[setting.tier].split('\n').find((line) => line.startsWith(`| \`${setting.env}\` |`))
      assert.ok(row !== undefined, `${setting.env} has a row in the ${setting.tier} table`)
      const cells = row.split(' | ')
      if (setting.secret === true) {
        assert.equal(cells[1], '(none: secret)', `${setting.env} is documented as a secret without a flag`)
        assert.ok(row.includes(`\`${setting.env}_FILE\``), `${setting.env} names its _FILE variant`)
      } else {
        assert.equal(cells[1], `\`--${setting.flag}\``, `--${setting.flag} documented`)
      }
      assert.equal(cells[2], setting.defaultValue === undefined ? '(unset)' : `\`${setting.defaultValue}\``, `${setting.env} default`)
      const meaning = cells.slice(3).join(' | ')
      for (const choice of setting.choices ?? []) assert.ok(meaning.includes(`\`${choice}\``), `${setting.env} lists the choice ${choice}`)
      if (setting.min !== undefined && setting.max !== undefined) {
        assert.ok(meaning.includes(`${setting.min} to ${setting.max}`), `${setting.env} states its range ${setting.min} to ${setting.max}`)
      }
    }
  })

  it('docs/reference/errors.md documents every error code with its status', () => {
    const doc = read('docs/reference/errors.md')
    for (const [code, { status }] of Object.entries(errorRegistry)) {
      assert.match(doc, new RegExp(`\\|\\s*\`${code}\`\\s*\\|\\s*${status}\\s*\\|`), `${code} (${status}) documented`)
    }
  })
})

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({ env: {} })
    assert.equal(config.port, 3000)
    assert.equal(config.host, '127.0.0.1')
    assert.equal(config.hashPolicy.algorithm, 'argon2id')
    assert.deepEqual(config.hashPolicy.argon2, { memoryKiB: 19456, timeCost: 2, parallelism: 1 })
    assert.equal(config.hashPolicy.bcrypt.cost, 10)
    assert.equal(config.hashThreads, undefined)
    assert.equal(config.databaseUrl, undefined)
  })

  it('lets flags win over environment variables', () => {
    const config = loadConfig({ env: { PORT: '4000', TOLLBOOTH_BCRYPT_COST: '12' }, argv: ['--port', '5000'] })
    assert.equal(config.port, 5000)
    assert.equal(config.hashPolicy.bcrypt.cost, 12)
  })

  it('refuses bad values with CONFIG_INVALID naming the setting', () => {
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [{ PORT: '70000' }, /PORT.*between 0 and 65535/],
      [{ TOLLBOOTH_SCRYPT_N: '3000' }, /TOLLBOOTH_SCRYPT_N.*power of two/],
      // Each within its own range, impossible together: 128·N·r is 1 GiB.
      [{ TOLLBOOTH_SCRYPT_N: '1048576' }, /TOLLBOOTH_SCRYPT_N \/ --scrypt-n is 1048576, it must be an integer from 2 to 262144: at r=8/],
      [{ TOLLBOOTH_SCRYPT_N: '262144', TOLLBOOTH_SCRYPT_R: '16' }, /TOLLBOOTH_SCRYPT_N.*at r=16/],
      [{ TOLLBOOTH_HASH_THREADS: '0' }, /TOLLBOOTH_HASH_THREADS/],
      [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
      [{ DATABASE_URL: 'postgres://127.0.0.1/db', TOLLBOOTH_JWT_ALGORITHM: 'HS256' }, /TOLLBOOTH_JWT_SECRET is required/],
      [{ DATABASE_URL: 'postgres://127.0.0.1/db' }, /TOLLBOOTH_KEY_ENCRYPTION_KEY .*is required with DATABASE_URL/],
      [{ TOLLBOOTH_KEY_ENCRYPTION_KEY: 'a passphrase, not a key' }, /TOLLBOOTH_KEY_ENCRYPTION_KEY must be 32 random bytes/],
      [{ TOLLBOOTH_KEY_ENCRYPTION_KEY: 'ab'.repeat(32), TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE: '/run/secrets/kek' }, /not both/],
      [{ TOLLBOOTH_JWT_ALGORITHM: 'HS256', TOLLBOOTH_SIGNING_KEY_FILE: '/run/secrets/key.pem' }, /TOLLBOOTH_SIGNING_KEY_FILE needs/],
      [{ TOLLBOOTH_JWT_ALGORITHM: 'RS256' }, /TOLLBOOTH_JWT_ALGORITHM/],
      [{ TOLLBOOTH_JWT_SECRET: 'short' }, /at least 32/],
      [{ TOLLBOOTH_REQUIRE_VERIFIED_EMAIL: 'maybe' }, /true or false/],
      [{ TOLLBOOTH_HASH_STRATEGY: 'libuv' }, /TOLLBOOTH_HASH_STRATEGY is not a setting of the service: the seed strategies run under the lab's harness/],
    ]
    for (const [env, message] of cases) {
      assert.throws(() => loadConfig({ env }), (err: { code?: string, message: string }) => err.code === 'CONFIG_INVALID' && message.test(err.message))
    }
    assert.throws(() => loadConfig({ env: {}, argv: ['--no-such-flag'] }), { code: 'CONFIG_INVALID' })
  })

  it('accepts the largest scrypt N the memory bound allows at each r', () => {
    assert.equal(loadConfig({ env: { TOLLBOOTH_SCRYPT_N: '262144' } }).hashPolicy.scrypt.N, 262144)
    assert.equal(loadConfig({ env: { TOLLBOOTH_SCRYPT_N: '1048576', TOLLBOOTH_SCRYPT_R: '2' } }).hashPolicy.scrypt.N, 1048576)
  })
})
