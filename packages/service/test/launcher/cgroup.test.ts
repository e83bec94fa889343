/**
 * createCpuQuota on a cgroup tree laid out in a temporary folder (v1 and v2 files as the kernel
 * shows them): the quota and its period written where each hierarchy reads them.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { createCpuQuota } from '../../src/launcher/cgroup.js'

const roots: string[] = []
afterEach(() => { for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true }) })

function fakeRoot (kind: 'v1' | 'v2'): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `tollbooth-cgroup-${kind}-`))
  roots.push(root)
  if (kind === 'v2') {
    fs.writeFileSync(path.join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n')
  } else {
    fs.mkdirSync(path.join(root, 'cpu'))
    fs.writeFileSync(path.join(root, 'cpu', 'cpu.cfs_quota_us'), '-1\n')
  }
  return root
}

describe('createCpuQuota', () => {
  it('writes the quota over the default 100 ms period (v2 cpu.max)', () => {
    const root = fakeRoot('v2')
    const outcome = createCpuQuota('replica', 0.5, { cgroupRoot: root })
    assert.ok(outcome.ok)
    assert.equal(fs.readFileSync(path.join(root, 'replica', 'cpu.max'), 'utf8'), '50000 100000')
    assert.equal(outcome.group.kind, 'cgroup-v2')
  })

  it('counts the quota over a shorter period when asked (v1 files), the CPUs unchanged', () => {
    const root = fakeRoot('v1')
    const outcome = createCpuQuota('replica', 0.25, { cgroupRoot: root, periodUs: 10_000 })
    assert.ok(outcome.ok)
    const dir = path.join(root, 'cpu', 'replica')
    assert.equal(fs.readFileSync(path.join(dir, 'cpu.cfs_period_us'), 'utf8'), '10000')
    assert.equal(fs.readFileSync(path.join(dir, 'cpu.cfs_quota_us'), 'utf8'), '2500')
  })

  it('refuses a period the kernel would refuse, and says why when there is no cpu controller', () => {
    const root = fakeRoot('v2')
    assert.throws(() => createCpuQuota('replica', 0.5, { cgroupRoot: root, periodUs: 500 }), /periodUs/)
    assert.throws(() => createCpuQuota('replica', 0.5, { cgroupRoot: root, periodUs: 2_000_000 }), /periodUs/)
    const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-cgroup-none-'))
    roots.push(bare)
    const outcome = createCpuQuota('replica', 0.5, { cgroupRoot: bare })
    assert.equal(outcome.ok, false)
    assert.match(outcome.ok ? '' : outcome.reason, /no cgroup cpu controller/)
  })
})
