import assert from 'node:assert/strict'
import os from 'node:os'
import { describe, it } from 'node:test'
import { defaultHashMemoryPercent, detectMemoryBudget, hashShareOf } from '../../src/machine/index.js'
import { fakeCgroupTree } from './fake-cgroup.js'

const GiB = 1024 ** 3
/** The machine's memory as the tests state it, so every case is decided by the fixture alone. */
const machineBytes = 16 * GiB
/** What cgroup v1 writes for "no limit": 2^63 rounded down to a page. */
const v1NoLimit = '9223372036854771712'

/** A fake cgroup filesystem (files relative to its root), a fake /proc/self/cgroup, and the machine's memory. */
function fakeTree (procSelfCgroup: string, files: Record<string, string>): { cgroupRoot: string, procSelfCgroup: string, machineBytes: number } {
  return { ...fakeCgroupTree(procSelfCgroup, files), machineBytes }
}

function budget (limitBytes: number, source: 'cgroup-v1' | 'cgroup-v2' | 'machine'): ReturnType<typeof detectMemoryBudget> {
  return { limitBytes, source, hashBytes: hashShareOf(limitBytes) }
}

describe('memory budget from cgroups and the machine', () => {
  it('cgroup v1: memory.limit_in_bytes under the memory controller', () => {
    const tree = fakeTree('4:memory:/\n1:cpu:/\n', { 'memory/memory.limit_in_bytes': String(2 * GiB) })
    assert.deepEqual(detectMemoryBudget(tree), budget(2 * GiB, 'cgroup-v1'))
  })

  it('cgroup v1: the "no limit" value (2^63 less a page) limits nothing', () => {
    const tree = fakeTree('4:memory:/\n', { 'memory/memory.limit_in_bytes': v1NoLimit })
    assert.deepEqual(detectMemoryBudget(tree), budget(machineBytes, 'machine'))
  })

  it('cgroup v1: a nested path whose ancestor has the lower limit (as on this kind of host: memory:/process_api/<id>)', () => {
    const tree = fakeTree('4:memory:/process_api/f969\n0::/\n', {
      'memory/memory.limit_in_bytes': v1NoLimit,
      'memory/process_api/memory.limit_in_bytes': String(3 * GiB),
      'memory/process_api/f969/memory.limit_in_bytes': String(6 * GiB),
    })
    assert.deepEqual(detectMemoryBudget(tree), budget(3 * GiB, 'cgroup-v1'))
  })

  it('cgroup v1: a membership path the container cannot see falls back to the mount\'s root (its own cgroup)', () => {
    const tree = fakeTree('4:memory:/docker/abc\n', { 'memory/memory.limit_in_bytes': String(GiB) })
    assert.deepEqual(detectMemoryBudget(tree), budget(GiB, 'cgroup-v1'))
  })

  it('cgroup v2: "max" is no limit', () => {
    const tree = fakeTree('0::/app\n', { 'memory.max': 'max', 'app/memory.max': 'max' })
    assert.deepEqual(detectMemoryBudget(tree), budget(machineBytes, 'machine'))
  })

  it('cgroup v2: memory.max in bytes, the lowest of the path and its ancestors', () => {
    const tree = fakeTree('0::/kubepods.slice/pod.slice/ctr.scope\n', {
      'kubepods.slice/memory.max': 'max',
      'kubepods.slice/pod.slice/memory.max': String(512 * 1024 ** 2),
      'kubepods.slice/pod.slice/ctr.scope/memory.max': String(GiB),
    })
    assert.deepEqual(detectMemoryBudget(tree), budget(512 * 1024 ** 2, 'cgroup-v2'))
  })

  it('v1 and v2 together: the lower limit decides', () => {
    const tree = fakeTree('4:memory:/\n0::/app\n', { 'memory/memory.limit_in_bytes': String(4 * GiB), 'app/memory.max': String(2 * GiB) })
    assert.deepEqual(detectMemoryBudget(tree), budget(2 * GiB, 'cgroup-v2'))
    const other = fakeTree('4:memory:/\n0::/app\n', { 'memory/memory.limit_in_bytes': String(GiB), 'app/memory.max': String(2 * GiB) })
    assert.deepEqual(detectMemoryBudget(other), budget(GiB, 'cgroup-v1'))
  })

  it('a limit above the machine\'s memory, garbage and missing files leave the machine\'s memory', () => {
    assert.deepEqual(detectMemoryBudget(fakeTree('0::/\n', { 'memory.max': String(64 * GiB) })), budget(machineBytes, 'machine'))
    assert.deepEqual(detectMemoryBudget(fakeTree('0::/\n', { 'memory.max': 'lots' })), budget(machineBytes, 'machine'))
    assert.deepEqual(detectMemoryBudget(fakeTree('', {})), budget(machineBytes, 'machine'))
  })

  it('the hash threads\' default share is half the limit', () => {
    assert.equal(defaultHashMemoryPercent, 50)
    assert.equal(hashShareOf(2 * GiB), GiB)
    assert.equal(hashShareOf(2 * GiB, 25), GiB / 2)
  })

  it('on this machine: a limit no larger than its memory, from a named source', () => {
    const detected = detectMemoryBudget()
    assert.ok(detected.limitBytes > 0 && detected.limitBytes <= os.totalmem(), JSON.stringify(detected))
    assert.ok(['cgroup-v1', 'cgroup-v2', 'machine'].includes(detected.source))
    assert.equal(detected.hashBytes, hashShareOf(detected.limitBytes))
  })
})
