import assert from 'node:assert/strict'
import { once } from 'node:events'
import { performance } from 'node:perf_hooks'
import { after, before, describe, it } from 'node:test'
import { TollboothError } from '../../src/errors.js'
import { answerReserveMs, hashDeadlineAt, type PasswordEngine } from '../../src/hashing/index.js'
import { slowBcryptHash } from '../helpers/policies.js'
import { watchQueries } from '../helpers/database.js'
import { parseResponses, rawConnection } from '../helpers/net/raw-http.js'
import { nextTurn, waitFor } from '../helpers/wait.js'
import { registerUser, request, seedPolicy, startTestService, uniqueEmail, type TestService } from '../helpers/service.js'

const isUserLookup = (text: string): boolean => text.includes('FROM users WHERE email')

describe('admission at once: an overloaded login is refused before it touches PostgreSQL', () => {
  let service: TestService
  let account: { email: string, password: string }
  before(async () => {
    // A 100 ms login deadline: behind eight queued verifies of ~70 ms, the queue cannot meet it.
    service = await startTestService({ policy: seedPolicy, threads: 1, config: { loginDeadlineMs: 100 } })
    const { email, password } = await registerUser(service)
    account = { email, password }
  })
  after(async () => { await service.close() })

  it('answers 503 with Retry-After, fast, and makes no database query for the refused logins', async () => {
    // Keep the only thread busy for several verifies (no deadline: these are admitted and queued),
    // each of a client of its own: clients take turns, so a newcomer waits behind one of each.
    const stored = await service.engine.hash('blocker password')
    const blockers = Array.from({ length: 8 }, async (_, i) => await service.engine.verify('blocker password', stored, { client: `blocker-${i}` }))
    const meanRunMs = service.engine.stats().meanRunMs
    const watch = watchQueries(service.db.pool)
    try {
      const logins = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
        const sent = performance.now()
        const body = i % 2 === 0 ? account : { email: uniqueEmail('ghost'), password: account.password }
        // Twenty clients, each from an address of its own: none is paced by another's refusal.
        const response = await request(service, 'POST', '/api/v1/auth/login', { body, from: `127.0.0.${10 + i}` })
        return { response, ms: performance.now() - sent }
      }))
      for (const { response } of logins) {
        assert.equal(response.status, 503)
        // Refused by the estimate, or (on a machine slow enough to spend 100 ms before the check) by the deadline itself.
        assert.ok(['SERVICE_OVERLOADED', 'HASH_DEADLINE_EXCEEDED'].includes(response.body.error.code), response.body.error.code)
        assert.ok(Number(response.headers.get('retry-after')) >= 1)
      }
      assert.deepEqual(watch.texts.filter(isUserLookup), [], 'no login looked its user up')
      const slowest = Math.max(...logins.map((l) => l.ms))
      assert.ok(slowest < 8 * meanRunMs, `the slowest refusal took ${slowest.toFixed(0)} ms: none waited for the ${(8 * meanRunMs).toFixed(0)} ms of work queued`)
    } finally {
      watch.stop()
      await Promise.all(blockers)
    }
    const metrics = (await request(service, 'GET', '/metrics')).body as string
    const refused = [...metrics.matchAll(/tollbooth_hash_tasks_total\{kind="verify",outcome="(?:rejected|deadline)"\} (\d+)/g)]
    assert.equal(refused.reduce((sum, match) => sum + Number(match[1]), 0), 20, 'each refusal is counted once')
  })
})

describe('the login deadline counts from the request\'s arrival', () => {
  let service: TestService
  let account: { email: string, password: string }
  before(async () => {
    service = await startTestService({ threads: 1, config: { loginDeadlineMs: 100 } })
    const { email, password } = await registerUser(service)
    account = { email, password }
  })
  after(async () => { await service.close() })

  it('refuses a login whose user lookup alone outlasted the deadline, even with a thread free, without hashing', async () => {
    const watch = watchQueries(service.db.pool, { delayMs: (text) => isUserLookup(text) ? 250 : 0 })
    const before = service.engine.stats()
    try {
      for (const body of [account, { email: uniqueEmail('ghost'), password: account.password }]) {
        const response = await request(service, 'POST', '/api/v1/auth/login', { body })
        assert.equal(response.status, 503, JSON.stringify(response.body))
        assert.equal(response.body.error.code, 'HASH_DEADLINE_EXCEEDED')
        assert.ok(Number(response.headers.get('retry-after')) >= 1)
      }
    } finally {
      watch.stop()
    }
    const stats = service.engine.stats()
    assert.equal(stats.completed, before.completed, 'no hash was computed for an answer nobody waits for')
    assert.equal(stats.deadlineExceeded - before.deadlineExceeded, 2)
    // Without the slow lookup the same login is served.
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: account })).status, 200)
  })
})

describe('a login\'s hash is due before its answer', () => {
  it('by a fortieth of the deadline, at most 50 ms', () => {
    assert.equal(answerReserveMs(2000), 50)
    assert.equal(answerReserveMs(5000), 50)
    assert.equal(answerReserveMs(400), 10)
    assert.equal(hashDeadlineAt(1000, 2000), 2950)
  })

  it('the verify a login asks of the engine is due that reserve before the login\'s deadline', async () => {
    const deadlineMs = 2000
    const service = await startTestService({ config: { loginDeadlineMs: deadlineMs } })
    try {
      const account = await registerUser(service)
      const { admitted, verified, restore } = spyOnAdmission(service.engine)
      try {
        assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email: account.email, password: account.password } })).status, 200)
      } finally {
        restore()
      }
      assert.equal(admitted.length, 1)
      assert.equal(verified.length, 1)
      const [{ deadlineAt, dueInMs }] = admitted as [{ deadlineAt: number, dueInMs: number }]
      // Counted from the arrival, which came before the admission: at most the deadline less the reserve.
      assert.ok(dueInMs <= deadlineMs - answerReserveMs(deadlineMs), `the hash was due in ${dueInMs} ms at its admission`)
      assert.ok(dueInMs > deadlineMs - answerReserveMs(deadlineMs) - 1000, `and not much earlier: ${dueInMs} ms`)
      assert.ok(Math.abs((verified[0] as number) - deadlineAt) < 1, 'the verify is due when its admission said')
    } finally {
      await service.close()
    }
  })
})

/** Watches a live engine's admissions (their deadlines, the tickets' re-admissions) and the deadline each verify runs under. */
function spyOnAdmission (engine: PasswordEngine): { admitted: Array<{ deadlineAt: number | undefined, dueInMs: number }>, verified: Array<number | undefined>, readmissions: () => number, restore: () => void } {
  const admit = engine.admit.bind(engine)
  const verify = engine.verify.bind(engine)
  const admitted: Array<{ deadlineAt: number | undefined, dueInMs: number }> = []
  const verified: Array<number | undefined> = []
  let readmissions = 0
  engine.admit = (kind, hashRequest) => {
    admitted.push({ deadlineAt: hashRequest?.deadlineAt, dueInMs: (hashRequest?.deadlineAt ?? Infinity) - performance.now() })
    const ticket = admit(kind, hashRequest)
    if (ticket instanceof TollboothError) return ticket
    const readmit = ticket.readmit.bind(ticket)
    ticket.readmit = () => { readmissions++; readmit() }
    return ticket
  }
  engine.verify = async (password, storedHash, options) => {
    verified.push(options?.ticket?.deadlineAt ?? options?.deadlineAt)
    return await verify(password, storedHash, options)
  }
  return { admitted, verified, readmissions: () => readmissions, restore: () => { engine.admit = admit; engine.verify = verify } }
}

describe('one admission per login', () => {
  let service: TestService
  before(async () => {
    // A deadline long enough that a check woken after waiting is admitted again even on a loaded
    // machine, where the queue's calibration reads each verify as several.
    service = await startTestService({ policy: seedPolicy, threads: 1, config: { loginDeadlineMs: 60_000 } })
  })
  after(async () => { await service.close() })

  it('asks admission once, at the door, for a right password, a wrong one and an unknown email: the verify is queued on its ticket', async () => {
    const account = await registerUser(service)
    const bodies = [{ email: account.email, password: account.password }, { email: account.email, password: 'not the password' }, { email: uniqueEmail('nobody'), password: 'not the password' }]
    for (const [index, body] of bodies.entries()) {
      const { admitted, restore } = spyOnAdmission(service.engine)
      const before = service.engine.stats().admissionChecks
      try {
        assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body })).status, index === 0 ? 200 : 401)
      } finally {
        restore()
      }
      assert.equal(admitted.length, 1, 'one admission, in onRequest')
      assert.equal(service.engine.stats().admissionChecks - before, 1, 'and no other decision of the queue: none at the lookup, none when the verify is queued')
    }
  })

  it('asks again only after a wait: a login that waits for its account\'s other checks is admitted again once per wake', async () => {
    // Six wrong passwords for one account at once, against a stored hash of cost 11 (a tenth of a
    // second a verify on one thread): five checks run, the sixth waits for them to end.
    const account = await registerUser(service)
    await service.db.pool.query('UPDATE users SET password_hash = $1 WHERE email = $2', [slowBcryptHash(11), account.email.toLowerCase()])
    const { admitted, readmissions, restore } = spyOnAdmission(service.engine)
    const before = service.engine.stats().admissionChecks
    let answers: Array<{ status: number, code: string | undefined }>
    try {
      answers = await Promise.all(Array.from({ length: 6 }, async () => {
        const response = await request(service, 'POST', '/api/v1/auth/login', { body: { email: account.email, password: 'a wrong guess' } })
        return { status: response.status, code: response.body?.error?.code as string | undefined }
      }))
    } finally {
      restore()
    }
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [401, 401, 401, 401, 401, 429], `five wrong guesses checked, the sixth throttled once it could read their failures: ${JSON.stringify(answers)}`)
    assert.equal(admitted.length, 6, 'one admission per login at the door')
    assert.ok(readmissions() >= 1, 'the sixth waited, and was admitted again when woken')
    assert.equal(service.engine.stats().admissionChecks - before, 6 + readmissions(), 'nothing else asked the queue')
  })
})

/**
 * `count` logins with unknown emails sent at once on connections opened first: each login's
 * headers with its body, or (`bodiesLate`) the bodies once every head is read and a turn has
 * passed. Returns their statuses and how many user lookups the service made meanwhile.
 */
async function burstOfLogins (service: TestService, count: number, bodiesLate: boolean): Promise<{ statuses: number[], lookups: number }> {
  const connections = Array.from({ length: count }, () => rawConnection(service.url))
  await Promise.all(connections.map(async (connection) => { await once(connection.socket, 'connect') }))
  const accepted = async (): Promise<number> => await new Promise((resolve, reject) => { service.app.server.getConnections((err, open) => { if (err === null) resolve(open); else reject(err) }) })
  await waitFor('the service to hold every connection', async () => await accepted() >= count)
  const bodies = connections.map(() => JSON.stringify({ email: uniqueEmail('burst'), password: 'not a password at all' }))
  const watch = watchQueries(service.db.pool)
  try {
    const heads = bodies.map((body) => `POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
    if (!bodiesLate) {
      connections.forEach((connection, i) => { connection.socket.write(`${heads[i] ?? ''}${bodies[i] ?? ''}`) })
    } else {
      // Every head read, and the turn after it over (the places of bodies not come given back), then the bodies.
      const read = requestsRead(service)
      connections.forEach((connection, i) => { connection.socket.write(heads[i] ?? '') })
      await waitFor('every login\'s headers read', () => read.count() >= count)
      read.stop()
      await nextTurn()
      connections.forEach((connection, i) => { connection.socket.write(bodies[i] ?? '') })
    }
    await waitFor('every login answered', () => connections.every((connection) => parseResponses(connection.received()).length === 1))
    const statuses = connections.map((connection) => parseResponses(connection.received())[0]?.status ?? 0)
    return { statuses, lookups: watch.texts.filter(isUserLookup).length }
  } finally {
    watch.stop()
    for (const connection of connections) connection.socket.destroy()
  }
}

describe('a burst of logins on an idle queue', () => {
  let service: TestService
  before(async () => {
    // One thread, ~70 ms a verify, a 500 ms deadline of which a login may wait half: about three fit, however empty the queue looks.
    service = await startTestService({ policy: seedPolicy, threads: 1, config: { loginDeadlineMs: 500 } })
  })
  after(async () => { await service.close() })

  it('is not admitted whole: the logins admitted and not yet queued count as waiting, so the excess is refused before its lookup', async () => {
    // 120 connections opened first, then a login written on each in one go: the service (in
    // this process) reads them all in one turn of its loop, as a crowd arriving together.
    const { statuses, lookups } = await burstOfLogins(service, 120, false)
    const answered = statuses.filter((status) => status === 401).length
    assert.equal(answered + statuses.filter((status) => status === 503).length, 120, JSON.stringify(statuses))
    assert.ok(answered >= 1, 'some were served')
    // Each admitted login costs a lookup; without the places held, nearly every one of the 120
    // saw the queue empty, was admitted and looked up before the queue refused it.
    assert.ok(lookups <= 50, `${lookups} lookups for ${answered} logins answered`)
    assert.equal(service.engine.stats().queued, 0)
  })

  it('takes a place again for a login whose body came late: a burst of bodies after their headers is not admitted whole either', async () => {
    // As above, but each login's headers go first and its body after them (as a client that
    // sends Expect: 100-continue does): the places given back for the late bodies are taken again
    // at the route, so the excess is still refused before its lookup (120 lookups without).
    const { statuses, lookups } = await burstOfLogins(service, 120, true)
    const answered = statuses.filter((status) => status === 401).length
    assert.equal(answered + statuses.filter((status) => status === 503).length, 120, JSON.stringify(statuses))
    assert.ok(lookups <= 50, `${lookups} lookups for ${answered} logins answered`)
  })

  it('holds no place for a login whose body does not come: headers alone cannot refuse the others', async () => {
    // 20 logins' headers, no body: each admitted at the door. Holding 20 places (1.4 s of hashes
    // on one thread against a 500 ms deadline) until their deadline refused every login meanwhile.
    const connections = Array.from({ length: 20 }, () => rawConnection(service.url))
    const read = requestsRead(service)
    try {
      for (const connection of connections) {
        connection.socket.write('POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n')
      }
      await waitFor('every login\'s headers read', () => read.count() >= 20)
      // The turn after them over: their places given back, their bodies still missing.
      await nextTurn()
      const body = { email: uniqueEmail('after-headers'), password: 'not a password at all' }
      const response = await request(service, 'POST', '/api/v1/auth/login', { body, from: '127.0.0.99' })
      assert.equal(response.status, 401, JSON.stringify(response.body))
    } finally {
      read.stop()
      for (const connection of connections) connection.socket.destroy()
    }
  })
})

/** Counts the requests the service (in this process) has read the headers of, from now until `stop`. */
function requestsRead (service: TestService): { count: () => number, stop: () => void } {
  let read = 0
  const onRequest = (): void => { read++ }
  service.app.server.on('request', onRequest)
  return { count: () => read, stop: () => { service.app.server.off('request', onRequest) } }
}
