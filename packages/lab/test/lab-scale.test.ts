/**
 * `lab scale` and `--replicas`: the same load against 1 and 2 real replicas behind HAProxy (the
 * service's launcher starts them), each under a 0.5-CPU quota when the lab may create cgroups.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { haproxyBinary } from 'tollbooth/launcher'
import { labMain } from '../src/cli/commands.js'
import { labScale } from '../src/lab.js'
import { createTestDatabase, type TestDatabase } from './helpers/database.js'

const noHaproxy = haproxyBinary() === undefined ? 'haproxy is not installed (Debian package `haproxy`)' : false

describe('lab scale: one run per replica count, on one database', { skip: noHaproxy }, () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase() })
  after(async () => { await database.drop() })

  it('measures 1 and 2 replicas behind HAProxy with the same load, and says how each ran', async () => {
    const result = await labScale({
      log: () => {},
      scenario: 'login-storm',
      replicaCounts: [1, 2],
      replicas: { count: 1, cpusPerReplica: 0.5 },
      databaseUrl: database.url,
      serviceEnv: { TOLLBOOTH_BCRYPT_COST: '4' },
      load: { durationMs: 2000, vus: 3, accounts: 3 },
    })
    assert.equal(result.command, 'compare', 'rendered as a comparison of replica counts')
    assert.deepEqual(result.runs.map((run) => run.label), ['1 replica', '2 replicas'])
    const quotaless = result.warnings.some((w) => /WITHOUT a CPU quota/.test(w))
    for (const [index, run] of result.runs.entries()) {
      assert.ok(run.all.ok > 0 && run.all.ok === run.all.requests, `${run.label}: ${run.all.ok}/${run.all.requests}`)
      const expected = quotaless ? /behind HAProxy/ : new RegExp(`^${index + 1} x 0.5 CPU each \\(cgroup-v[12]\\) behind HAProxy; hash threads ${index === 0 ? '1' : '1,1'}$`)
      assert.match(run.service.settings.replicas ?? '', expected)
    }
  })
})

describe('the replica flags', () => {
  it('scale needs a list of counts; run takes one count', async () => {
    await assert.rejects(labMain(['scale', '--scenario', 'login-storm']), { code: 'CONFIG_INVALID', message: /--replicas 1,2,3/ })
    await assert.rejects(labMain(['run', '--scenario', 'login-storm', '--replicas', '1,2']), { code: 'CONFIG_INVALID', message: /lab scale/ })
  })
})
