/**
 * How long one hash takes on this machine with every hash thread busy at once, which is what a
 * login storm sees: on one idle thread a memory-hard hash runs faster than when the other
 * threads share the caches and memory bandwidth. The real engine (tollbooth's pool, its threads
 * at nice 0) verifies a batch queued all at once, so no thread idles; each verify's time is the
 * one the worker measured around the hash alone. Nice 0, not the service's 10: the measurement is
 * of the hash, and at nice 10 anything else running on the machine would take the cores first.
 */
import { performance } from 'node:perf_hooks'
import { createPasswordEngine, defaultPolicy, type HashParams, type HashPolicy } from '../hashing/index.js'

export interface PoolMeasurement {
  hash: HashParams
  threads: number
  /** Verifies measured (after one warm-up verify a thread). */
  verifies: number
  /** The median run time of one verify, every thread busy. */
  medianMs: number
  /** Verifies completed per second of wall time, all threads together. */
  verifiesPerSecond: number
  /** The process's highest resident set seen while measuring (the hash threads are in it). */
  peakRssBytes: number
}

export interface MeasurePoolOptions {
  threads: number
  memoryBudgetBytes: number
  /** Verifies each thread runs in the measured batch. */
  rounds: number
}

/** The policy that makes `hash`: the default policy with `hash`'s algorithm and parameters. */
function policyOf (hash: HashParams): HashPolicy {
  switch (hash.algorithm) {
    case 'argon2id': return { ...defaultPolicy, algorithm: 'argon2id', argon2: hash.params }
    case 'bcrypt': return { ...defaultPolicy, algorithm: 'bcrypt', bcrypt: hash.params }
    case 'scrypt': return { ...defaultPolicy, algorithm: 'scrypt', scrypt: hash.params }
  }
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] ?? NaN : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2
}

export async function measurePool (hash: HashParams, { threads, memoryBudgetBytes, rounds }: MeasurePoolOptions): Promise<PoolMeasurement> {
  let peakRssBytes = process.memoryUsage.rss()
  const sampler = setInterval(() => { peakRssBytes = Math.max(peakRssBytes, process.memoryUsage.rss()) }, 20)
  const engine = await createPasswordEngine({ policy: policyOf(hash), threads, memoryBudgetBytes, maxQueue: Math.max(threads * rounds, 1), threadNice: 0 })
  try {
    const password = 'calibration password'
    const stored = await engine.hash(password)
    const batch = async (size: number): Promise<void> => {
      const results = await Promise.all(Array.from({ length: size }, async () => await engine.verify(password, stored)))
      if (!results.every((result) => result.match)) throw new Error('a calibration verify did not match its own hash')
    }
    await batch(threads)
    const runMs: number[] = []
    const stopListening = engine.onTask((event) => { if (event.kind === 'verify' && event.outcome === 'ok') runMs.push(event.runMs) })
    const started = performance.now()
    await batch(threads * rounds)
    const wallMs = performance.now() - started
    stopListening()
    return { hash, threads, verifies: runMs.length, medianMs: median(runMs), verifiesPerSecond: runMs.length * 1000 / wallMs, peakRssBytes }
  } finally {
    clearInterval(sampler)
    await engine.close()
  }
}
