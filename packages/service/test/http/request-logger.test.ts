/**
 * A request's child logger is made the first time the request writes a line at an enabled
 * level (logger.ts, lazyChildLogger): most requests write none, and pino's child() was a
 * measurable share of a refusal. What is written must not change: the same bindings, the
 * same levels, the same redaction.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type pino from 'pino'
import { lazyChildLogger } from '../../src/http/logger.js'
import { capturingLogger, request, startTestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/** A capturing logger whose child() calls are counted. */
function countingLogger (level: string): { logger: pino.Logger, lines: Array<Record<string, unknown>>, children: () => number } {
  const { logger, lines } = capturingLogger(level)
  let children = 0
  const child = logger.child as unknown as (this: unknown, bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => pino.Logger
  // pino's children inherit from the root logger, this override included: call it on `this`.
  logger.child = function (this: unknown, bindings: pino.Bindings, options?: pino.ChildLoggerOptions) {
    children++
    return child.call(this, bindings, options)
  } as unknown as typeof logger.child
  return { logger, lines, children: () => children }
}

describe("a request's child logger", () => {
  it('is made only when a line is written at an enabled level, and writes what pino would', () => {
    const { logger, lines, children } = countingLogger('info')
    const log = lazyChildLogger(logger, { reqId: 'req-1' }, {})
    log.debug('below the level')
    log.trace('below the level')
    assert.equal(log.isLevelEnabled('debug'), false)
    assert.equal(log.level, 'info')
    assert.equal(children(), 0, 'nothing written, no child made')
    assert.equal(lines.length, 0)

    log.info({ userId: 7 }, 'first')
    log.warn('second')
    assert.equal(children(), 1, 'one child, made at the first line')
    assert.deepEqual(lines.map((line) => [line.reqId, line.msg, line.level]), [['req-1', 'first', 30], ['req-1', 'second', 40]])
    assert.equal(lines[0]?.userId, 7)
    const nested = log.child({ step: 'hash' })
    nested.error('third')
    assert.deepEqual([lines[2]?.reqId, lines[2]?.step], ['req-1', 'hash'], 'its own children keep the request binding')
    assert.deepEqual(log.bindings(), { reqId: 'req-1' }, "pino's other methods reach the child")
  })

  it("follows a route's own level, above or below the service's", () => {
    const { logger, lines } = countingLogger('info')
    lazyChildLogger(logger, { reqId: 'a' }, { level: 'debug' }).debug('a route logging at debug')
    lazyChildLogger(logger, { reqId: 'b' }, { level: 'warn' }).info('a route logging at warn only')
    assert.deepEqual(lines.map((line) => line.reqId), ['a'])
  })

  it('redacts secrets as the service logger does', () => {
    const { logger, lines } = countingLogger('info')
    lazyChildLogger(logger, { reqId: 'r' }, {}).info({ body: { password: 'hunter2', token: 'abc' } }, 'with secrets')
    assert.deepEqual(lines[0]?.body, { password: '[redacted]', token: '[redacted]' })
  })

  it('in the service: a line a request writes carries its reqId, and a request that writes none makes no child', async () => {
    const debug = countingLogger('debug')
    const service = await startTestService({ logger: debug.logger })
    const info = countingLogger('info')
    // The same database, a service logging at info (pino's children keep the level they were made with).
    const quiet = await startTestService({ logger: info.logger, db: service.db })
    try {
      const before = debug.children()
      assert.equal((await request(service, 'GET', '/api/v1/me')).status, 401)
      // The line is written when the response has finished, which may be after the client has read it.
      const completedLine = (): Record<string, unknown> | undefined => debug.lines.find((line) => line.msg === 'request completed' && line.url === '/api/v1/me')
      await waitFor('the request\'s completed line', () => completedLine() !== undefined)
      const completed = completedLine()
      assert.ok(completed !== undefined && typeof completed.reqId === 'string', `the request's line and its id: ${JSON.stringify(completed)}`)
      assert.equal(debug.children() - before, 1, 'at debug, the request wrote lines: one child')

      const quietBefore = info.children()
      assert.equal((await request(quiet, 'GET', '/api/v1/me')).status, 401)
      assert.equal(info.children(), quietBefore, 'at info it wrote none, and no child was made')
    } finally {
      await quiet.close()
      await service.close()
    }
  })
})
