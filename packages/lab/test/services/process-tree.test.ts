import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { processTreeUsage } from '../../src/services/process-tree.js'

describe('process tree usage from /proc', () => {
  it('agrees with what this process says of its own CPU and memory (ticks and pages in the system\'s units)', { skip: process.platform !== 'linux' }, () => {
    const started = Date.now()
    while (Date.now() - started < 300) Math.sqrt(Math.random())
    const usage = processTreeUsage(process.pid)
    const cpu = process.cpuUsage()
    const rssBytes = process.memoryUsage().rss
    assert.ok(usage !== null)
    assert.ok(usage.processes >= 1)
    const ownCpuSeconds = (cpu.user + cpu.system) / 1e6
    // Ticks are coarse (10 ms at 100 Hz) and children are counted too: generous bounds.
    assert.ok(Math.abs(usage.cpuSeconds - ownCpuSeconds) < 0.1 + ownCpuSeconds * 0.2, `${usage.cpuSeconds} s against ${ownCpuSeconds} s`)
    assert.ok(usage.rssBytes > rssBytes * 0.7 && usage.rssBytes < rssBytes * 1.5, `${usage.rssBytes} bytes against ${rssBytes}`)
  })

  it('is null for a process that does not exist', () => {
    assert.equal(processTreeUsage(2 ** 22 + 1), null)
  })
})
