import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createError } from '../../src/errors.js'

test('an answer to the client (4xx, or an overload 503 with Retry-After) carries no stack; a fault keeps its stack', () => {
  const stackFrames = (err: Error): number => (err.stack ?? '').split('\n').filter((line) => line.trimStart().startsWith('at ')).length
  assert.equal(stackFrames(createError('AUTH_INVALID_CREDENTIALS')), 0)
  assert.equal(stackFrames(createError('SERVICE_OVERLOADED', undefined, { retryAfterSeconds: 1 })), 0)
  assert.ok(stackFrames(createError('INTERNAL')) > 0, 'a 500 keeps the stack that explains it')
  assert.ok(Error.stackTraceLimit > 0, 'the global limit is restored')
  assert.ok(stackFrames(new Error('plain')) > 0)
})
