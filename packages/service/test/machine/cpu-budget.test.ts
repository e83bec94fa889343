import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { detectCpuBudget, type CpuBudget } from '../../src/machine/index.js'
import { fakeCgroupTree as fakeTree } from './fake-cgroup.js'

const execFileAsync = promisify(execFile)
const indexUrl = new URL('../../src/hashing/index.js', import.meta.url).href
const affinity = os.availableParallelism()
const uncapped: CpuBudget = { cpus: affinity, quota: undefined, source: affinity < os.cpus().length ? 'affinity' : 'cores' }

/** What a quota of `quota` CPUs gives on this machine: rounded up, never above affinity. */
function capped (quota: number, source: 'cgroup-v1' | 'cgroup-v2'): CpuBudget {
  const fromQuota = Math.max(1, Math.ceil(quota))
  return fromQuota <= affinity ? { cpus: fromQuota, quota, source } : { ...uncapped, quota }
}

describe('CPU budget from cgroups, affinity and cores', () => {
  it('cgroup v1: cfs_quota_us / cfs_period_us under the cpu controller', () => {
    const tree = fakeTree('2:cpuacct:/\n1:cpu:/\n0::/\n', { 'cpu/cpu.cfs_quota_us': '50000', 'cpu/cpu.cfs_period_us': '100000' })
    assert.deepEqual(detectCpuBudget(tree), { cpus: 1, quota: 0.5, source: 'cgroup-v1' })
  })

  it('cgroup v1: a quota of -1 is no limit', () => {
    const tree = fakeTree('1:cpu:/\n', { 'cpu/cpu.cfs_quota_us': '-1', 'cpu/cpu.cfs_period_us': '100000' })
    assert.deepEqual(detectCpuBudget(tree), uncapped)
  })

  it('cgroup v1: co-mounted cpu,cpuacct and a nested path whose parent has the lower quota', () => {
    const tree = fakeTree('4:cpu,cpuacct:/kubepods/pod1/ctr\n', {
      'cpu,cpuacct/cpu.cfs_quota_us': '-1',
      'cpu,cpuacct/cpu.cfs_period_us': '100000',
      'cpu,cpuacct/kubepods/pod1/cpu.cfs_quota_us': '50000',
      'cpu,cpuacct/kubepods/pod1/cpu.cfs_period_us': '100000',
      'cpu,cpuacct/kubepods/pod1/ctr/cpu.cfs_quota_us': '400000',
      'cpu,cpuacct/kubepods/pod1/ctr/cpu.cfs_period_us': '100000',
    })
    assert.deepEqual(detectCpuBudget(tree), { cpus: 1, quota: 0.5, source: 'cgroup-v1' })
  })

  it('cgroup v2: "max 100000" is no limit', () => {
    const tree = fakeTree('0::/app\n', { 'cpu.max': 'max 100000', 'app/cpu.max': 'max 100000' })
    assert.deepEqual(detectCpuBudget(tree), uncapped)
  })

  it('cgroup v2: "150000 100000" is 1.5 CPUs, rounded up to 2 threads', () => {
    const tree = fakeTree('0::/app\n', { 'app/cpu.max': '150000 100000' })
    assert.deepEqual(detectCpuBudget(tree), capped(1.5, 'cgroup-v2'))
  })

  it('cgroup v2: a nested path whose parent has the lower quota', () => {
    const tree = fakeTree('0::/kubepods.slice/pod.slice/ctr.scope\n', {
      'kubepods.slice/cpu.max': 'max 100000',
      'kubepods.slice/pod.slice/cpu.max': '25000 50000',
      'kubepods.slice/pod.slice/ctr.scope/cpu.max': '300000 100000',
    })
    assert.deepEqual(detectCpuBudget(tree), { cpus: 1, quota: 0.5, source: 'cgroup-v2' })
  })

  it('v1 and v2 together: the lower quota decides', () => {
    const tree = fakeTree('1:cpu:/\n0::/\n', {
      'cpu/cpu.cfs_quota_us': '150000',
      'cpu/cpu.cfs_period_us': '100000',
      'cpu.max': '50000 100000',
    })
    assert.deepEqual(detectCpuBudget(tree), { cpus: 1, quota: 0.5, source: 'cgroup-v2' })
  })

  it('missing files are normal: no cgroup limit falls back to affinity, then cores', () => {
    const tree = fakeTree('', {})
    assert.deepEqual(detectCpuBudget(tree), uncapped)
    assert.deepEqual(detectCpuBudget({ cgroupRoot: '/nonexistent', procSelfCgroup: '/nonexistent' }), uncapped)
  })

  it('a CPU affinity mask (taskset -c 0) limits the budget to 1 CPU', async (t) => {
    if (os.cpus().length < 2) { t.skip('needs 2+ cores to tell affinity from cores'); return }
    try {
      await execFileAsync('taskset', ['-c', '0', 'true'])
    } catch {
      t.skip('taskset is not available'); return
    }
    const tree = fakeTree('', {})
    const script = `const m = await import(${JSON.stringify(indexUrl)}); console.log(JSON.stringify(m.detectCpuBudget(${JSON.stringify(tree)})))`
    const { stdout } = await execFileAsync('taskset', ['-c', '0', process.execPath, '--input-type=module', '-e', script])
    assert.deepEqual(JSON.parse(stdout), { cpus: 1, source: 'affinity' })
  })

  it('a real cgroup v1 quota of 50000/100000 gives 1 CPU (root only)', async (t) => {
    const controller = '/sys/fs/cgroup/cpu'
    const membership = fs.existsSync('/proc/self/cgroup') ? fs.readFileSync('/proc/self/cgroup', 'utf8') : ''
    if (process.getuid?.() !== 0) { t.skip('needs root to create a cgroup'); return }
    if (!fs.existsSync(path.join(controller, 'cpu.cfs_quota_us')) || !/^\d+:cpu(,[^:]*)?:\/$/m.test(membership)) {
      t.skip(`${controller} is not a cgroup v1 cpu controller this process sits at the root of`); return
    }
    const group = path.join(controller, `tollbooth-test-${process.pid}`)
    try {
      fs.mkdirSync(group)
    } catch (err) {
      t.skip(`cannot create a cgroup here: ${(err as Error).message}`); return
    }
    try {
      fs.writeFileSync(path.join(group, 'cpu.cfs_period_us'), '100000')
      fs.writeFileSync(path.join(group, 'cpu.cfs_quota_us'), '50000')
      const script = `const m = await import(${JSON.stringify(indexUrl)}); console.log(JSON.stringify(m.detectCpuBudget()))`
      // The shell joins the cgroup, then becomes node: the process reads its own, real limits.
      const child = spawn('sh', ['-c', `echo $$ > ${group}/cgroup.procs && exec "$0" --input-type=module -e "$1"`, process.execPath, script], { stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
      child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
      const code = await new Promise<number | null>((resolve) => { child.on('close', resolve) })
      assert.equal(code, 0, stderr)
      assert.deepEqual(JSON.parse(stdout), { cpus: 1, quota: 0.5, source: 'cgroup-v1' })
    } finally {
      fs.rmdirSync(group)
    }
  })
})
