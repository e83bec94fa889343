import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { candidateCost, candidateLadder } from '../../src/calibrate/candidates.js'
import { meetsOwaspMinimum } from '../../src/calibrate/minimums.js'
import { searchParameters, type SearchOptions } from '../../src/calibrate/search.js'
import { hashMemoryBytes, type HashAlgorithm, type HashParams } from '../../src/hashing/index.js'

const MiB = 1024 * 1024

/**
 * A fake clock: a cost model of one hash on a made-up machine (a fixed overhead plus time in
 * proportion to the work, memory-hard work a little dearer per unit as it grows), with a
 * deterministic wobble of up to ±`noise` (a busy machine), so the search is driven without
 * hashing anything.
 */
function fakeClock (noise = 0): { measure: (hash: HashParams) => Promise<number>, calls: HashParams[] } {
  const calls: HashParams[] = []
  const measure = async (hash: HashParams): Promise<number> => {
    calls.push(hash)
    const work = candidateCost(hash)
    const base = hash.algorithm === 'argon2id'
      ? 1.5 + work * 0.0008 * (1 + work / 4_000_000)
      : hash.algorithm === 'scrypt' ? 2 + work * 2.8e-4 : 0.5 + work * 0.06
    const wobble = noise * Math.sin(calls.length * 2.7)
    return base * (1 + wobble)
  }
  return { measure, calls }
}

async function search (algorithm: HashAlgorithm, perHashBytes: number, targetMs: number, clock = fakeClock(), extra: Partial<SearchOptions> = {}): Promise<Awaited<ReturnType<typeof searchParameters>> & { ladder: HashParams[] }> {
  const ladder = candidateLadder(algorithm, perHashBytes)
  const result = await searchParameters({ ladder, targetMs, tolerance: 0.1, maxMeasurements: 14, measure: clock.measure, ...extra })
  return { ...result, ladder }
}

describe('the candidates', () => {
  it('argon2id: cheapest first, every one at OWASP\'s minimum or above and within the memory per hash', () => {
    for (const perHash of [8 * MiB, 12 * MiB, 30 * MiB, 64 * MiB, 256 * MiB, 6 * 1024 * MiB]) {
      const ladder = candidateLadder('argon2id', perHash)
      assert.ok(ladder.length > 0, `${perHash} fits the least OWASP setting (7 MiB, t=5)`)
      for (const [i, hash] of ladder.entries()) {
        assert.ok(meetsOwaspMinimum(hash), JSON.stringify(hash))
        assert.ok(hashMemoryBytes(hash) <= Math.min(perHash, 256 * MiB), JSON.stringify(hash))
        if (i > 0) assert.ok(candidateCost(hash) > candidateCost(ladder[i - 1] as HashParams), 'strictly dearer each step')
      }
    }
    assert.deepEqual(candidateLadder('argon2id', 256 * MiB)[0]?.params, { memoryKiB: 19456, timeCost: 2, parallelism: 1 }, 'OWASP\'s first setting is the floor')
    assert.deepEqual(candidateLadder('argon2id', 10 * MiB)[0]?.params, { memoryKiB: 9216, timeCost: 4, parallelism: 1 }, 'with 10 MiB a hash, the 9 MiB, 4-pass equivalent')
    assert.deepEqual(candidateLadder('argon2id', 6 * MiB), [], 'below 7 MiB a hash nothing meets OWASP')
  })

  it('scrypt from N=2^17 r=8 p=1 (128 MiB), bcrypt from cost 10', () => {
    const scrypt = candidateLadder('scrypt', 256 * MiB)
    assert.deepEqual(scrypt[0]?.params, { N: 2 ** 17, r: 8, p: 1 })
    assert.ok(scrypt.every((hash) => meetsOwaspMinimum(hash) && hashMemoryBytes(hash) <= 256 * MiB))
    assert.deepEqual(candidateLadder('scrypt', 100 * MiB), [])
    assert.deepEqual(candidateLadder('bcrypt', 1 * MiB).map((hash) => hash.algorithm === 'bcrypt' && hash.params.cost), [10, 11, 12, 13, 14, 15, 16])
  })
})

describe('the search, driven by a fake clock', () => {
  it('argon2id: converges within the tolerance in a few measurements, from any target the candidates span', async () => {
    for (const targetMs of [40, 100, 250, 500, 1000]) {
      const clock = fakeClock()
      const result = await search('argon2id', 256 * MiB, targetMs, clock)
      assert.equal(result.outcome, 'target', `${targetMs} ms: ${JSON.stringify(result.measurements)}`)
      assert.ok(Math.abs(result.ms - targetMs) <= 0.1 * targetMs)
      assert.ok(clock.calls.length <= 8, `${targetMs} ms in ${clock.calls.length} measurements`)
      assert.ok(clock.calls.every((hash) => result.ladder.includes(hash)), 'only candidates are measured')
    }
  })

  it('still converges and ends on a noisy clock (±8 %), confirming before it takes a candidate', async () => {
    const confirmClock = fakeClock()
    const clock = fakeClock(0.08)
    const result = await search('argon2id', 256 * MiB, 250, clock, { confirm: confirmClock.measure })
    assert.ok(result.measurements.length <= 14)
    assert.equal(result.outcome, 'target', JSON.stringify(result.measurements))
    assert.equal(result.measurements.at(-1)?.kind, 'confirm', 'the choice was measured again')
    assert.ok(Math.abs(result.ms - 250) <= 25)
  })

  it('respects the memory budget: with 32 MiB a hash it reaches the target with more passes instead', async () => {
    const result = await search('argon2id', 32 * MiB, 250)
    assert.equal(result.outcome, 'target')
    assert.ok(result.chosen.algorithm === 'argon2id' && result.chosen.params.memoryKiB <= 32 * 1024 && result.chosen.params.timeCost > 2, JSON.stringify(result.chosen))
  })

  it('never goes below OWASP\'s minimum: a target faster than it gives the minimum, said so', async () => {
    const result = await search('argon2id', 256 * MiB, 5)
    assert.equal(result.outcome, 'minimum-too-slow')
    assert.deepEqual(result.chosen.params, { memoryKiB: 19456, timeCost: 2, parallelism: 1 })
    assert.equal(result.measurements.length, 1)
    const scrypt = await search('scrypt', 256 * MiB, 100)
    assert.equal(scrypt.outcome, 'minimum-too-slow', 'scrypt N=2^17 r=8 takes about 290 ms on the fake machine')
    assert.deepEqual(scrypt.chosen.params, { N: 2 ** 17, r: 8, p: 1 })
  })

  it('bcrypt: the nearest cost when doublings step over the target', async () => {
    const result = await search('bcrypt', MiB, 180) // cost 11: 123 ms, cost 12: 246 ms
    assert.equal(result.outcome, 'closest')
    assert.deepEqual(result.chosen.params, { cost: 11 })
    assert.equal((await search('bcrypt', MiB, 250)).outcome, 'target')
  })

  it('a target beyond the dearest candidate gives that candidate, said so', async () => {
    const result = await search('bcrypt', MiB, 60_000)
    assert.equal(result.outcome, 'maximum-too-fast')
    assert.deepEqual(result.chosen.params, { cost: 16 })
  })

  it('ends within its measurement cap whatever the clock says (a clock that answers at random)', async () => {
    let seed = 7
    const random = async (): Promise<number> => { seed = (seed * 48271) % 2147483647; return 10 + (seed % 1000) }
    for (let run = 0; run < 20; run++) {
      const result = await search('argon2id', 256 * MiB, 400, fakeClock(), { measure: random, maxMeasurements: 10 })
      assert.ok(result.measurements.length <= 10)
      assert.ok(result.ladder.includes(result.chosen))
    }
  })
})
