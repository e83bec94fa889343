/** Tiny shared fixtures for the hashing tests. */
import { AdmissionTicket, type AdmissionRequest, type HashWork } from '../../src/hashing/index.js'
import assert from 'node:assert/strict'
import { isTollboothError, type ErrorCode, type TollboothError } from '../../src/errors.js'
import type { HashPolicy } from '../../src/hashing/index.js'
import { cheapPolicy } from '../helpers/policies.js'

export { cheapPolicy, seedPolicy } from '../helpers/policies.js'

export function policyFor (algorithm: HashPolicy['algorithm'], base: HashPolicy = cheapPolicy): HashPolicy {
  return { ...base, algorithm }
}

/** Awaits a promise that must reject with a coded error, and returns that error. */
export async function rejection (promise: Promise<unknown>, code: ErrorCode): Promise<TollboothError> {
  try {
    await promise
  } catch (err) {
    assert.ok(isTollboothError(err), `expected a TollboothError ${code}, got ${String(err)}`)
    assert.equal(err.code, code, err.message)
    return err
  }
  assert.fail(`expected a rejection with ${code}, but it resolved`)
}

/** Runs a function that must throw a coded error, and returns that error. */
export function thrown (fn: () => unknown, code: ErrorCode): TollboothError {
  try {
    fn()
  } catch (err) {
    assert.ok(isTollboothError(err), `expected a TollboothError ${code}, got ${String(err)}`)
    assert.equal(err.code, code, err.message)
    return err
  }
  assert.fail(`expected ${code} to be thrown`)
}

/** How an executor is asked to run a task outside the engine: a ticket with no place, admitted when the task is submitted. */
export function unadmitted (kind: 'hash' | 'verify' = 'verify', request: Partial<Omit<AdmissionRequest, 'kind'>> = {}): HashWork {
  return { ticket: new AdmissionTicket({ kind, deadlineAt: undefined, client: '', signal: undefined, ...request }, undefined, () => undefined), keepIfStarted: false, now: performance.now() }
}
