/**
 * The sizing arithmetic: replicas for a peak at a headroom with spares, the headroom left at the
 * peak, and the peak at which the shared database is the limit.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databaseAtPeak, databaseLimits, planReplicas, ratePerCpu } from '../../src/sizing/index.js'

const measured = { capacityPerSecond: 40, serviceCpuCores: 2, peakPerSecond: 500, headroom: 0.3, spareReplicas: 1 }

describe('sizing: replicas for a peak', () => {
  it('rates the CPU the service used, not the machine\'s', () => {
    assert.equal(ratePerCpu(40, 2), 20)
    assert.equal(ratePerCpu(30, 1.5), 20)
    assert.equal(ratePerCpu(null, 2), null, 'no knee, no rate')
    assert.equal(ratePerCpu(40, null), null, 'no CPU scraped, no rate')
    assert.equal(ratePerCpu(40, 0), null)
  })

  it('serves the peak at the headroom from replicas of each size, plus the spares', () => {
    // 20/s per CPU: a 2-CPU replica serves 40/s, 28/s at 30 % headroom: 500 / 28 = 17.9 -> 18, + 1 spare.
    const two = planReplicas(measured, 2)
    assert.equal(two.replicaCapacityPerSecond, 40)
    assert.equal(two.replicas, 19)
    assert.ok(Math.abs(two.headroomAtPeak - (1 - 500 / (18 * 40))) < 1e-12)
    assert.ok(two.headroomAtPeak >= 0.3, 'at least the headroom asked for')
    // 8 CPUs: 160/s, 112/s at the headroom: 4.46 -> 5, + 1.
    assert.equal(planReplicas(measured, 8).replicas, 6)
    // No spare asked for: only what the peak needs.
    assert.equal(planReplicas({ ...measured, spareReplicas: 0 }, 8).replicas, 5)
  })

  it('needs no extra replica for a peak that fits exactly, and at least one for any peak', () => {
    // 100/s per replica at no headroom: 500/s is five, not six (a rounding error must not add one).
    const exact = planReplicas({ capacityPerSecond: 100, serviceCpuCores: 1, peakPerSecond: 500, headroom: 0, spareReplicas: 0 }, 1)
    assert.equal(exact.replicas, 5)
    assert.ok(Math.abs(exact.headroomAtPeak) < 1e-12, 'no headroom left')
    const tiny = planReplicas({ capacityPerSecond: 100, serviceCpuCores: 1, peakPerSecond: 1, headroom: 0.5, spareReplicas: 0 }, 4)
    assert.equal(tiny.replicas, 1)
    assert.ok(tiny.headroomAtPeak > 0.99)
  })

  it('refuses a headroom outside 0 to below 1, and a plan without a measured capacity', () => {
    assert.throws(() => planReplicas({ ...measured, headroom: 1 }, 2), RangeError)
    assert.throws(() => planReplicas({ ...measured, headroom: -0.1 }, 2), RangeError)
    assert.throws(() => planReplicas({ ...measured, capacityPerSecond: 0 }, 2), RangeError)
    assert.throws(() => planReplicas(measured, 0), RangeError)
  })
})

describe('sizing: the shared database', () => {
  const cost = { statements: 4, walBytes: 2048, cpuSeconds: 0.002 }

  it('is the limit at its CPUs ÷ the CPU per login, less the headroom, whatever the replicas', () => {
    // 2 ms per login: 500 logins/s per database CPU, 350 at 30 % headroom.
    assert.deepEqual(databaseLimits(cost, 0.3, [2, 8])?.map((limit) => [limit.databaseCpus, Math.round(limit.limitPerSecond)]), [[2, 700], [8, 2800]])
    assert.equal(databaseLimits({ ...cost, cpuSeconds: null }, 0.3, [2]), null, 'no CPU measured (a database elsewhere): no limit given')
  })

  it('says what the peak costs it: statements, WAL and the CPUs it needs at the headroom', () => {
    const atPeak = databaseAtPeak(cost, 500, 0.3)
    assert.equal(atPeak.statementsPerSecond, 2000)
    assert.equal(atPeak.walBytesPerSecond, 1_024_000)
    assert.ok(Math.abs((atPeak.cpus ?? 0) - 1) < 1e-12)
    assert.equal(atPeak.cpusNeeded, 2, '1 core at 70 % of its CPUs: 1.43 -> 2')
    const unmeasured = databaseAtPeak({ statements: null, walBytes: 100, cpuSeconds: null }, 10, 0.3)
    assert.deepEqual(unmeasured, { statementsPerSecond: null, walBytesPerSecond: 1000, cpus: null, cpusNeeded: null })
  })
})
