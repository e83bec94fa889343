import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig, parseTrustProxy } from '../../src/config/index.js'
import { fastifyTrustProxy, loginThrottlePolicy } from '../../src/http/app.js'
import { passwordCheckRules, startPasswordCheck, verifyFormsOfCheck } from '../../src/accounts/password-check.js'
import { AdmissionTicket, type AdmissionRequest, type HashOptions } from '../../src/hashing/index.js'
import { QueuePlace } from '../../src/hashing/queue/scheduler.js'
import { ChecksUnderWay } from '../../src/accounts/checks-under-way.js'
import { createLogger } from '../../src/http/logger.js'
import { waitFor } from '../helpers/wait.js'
import { addressKey, allowedAt, decide, delayAfterMs, liveFailures, withChecksInFlight, type FailureCount, type LoginThrottlePolicy } from '../../src/accounts/login-throttle.js'

const policy: LoginThrottlePolicy = { accountFreeFailures: 5, addressFreeFailures: 100, addressFreeFailuresPerAccount: 10, deviceFreeFailures: 10, windowMs: 900_000, baseDelayMs: 1000, maxDelayMs: 900_000 }
const t0 = Date.parse('2030-01-01T00:00:00Z')
/** What a password check logs with, here to nowhere. */
const silentLogging = { log: createLogger('silent'), throttled: 'throttled', failed: 'failed' }
const count = (failures: number, lastFailureAt = t0, windowStartedAt = t0): FailureCount => ({ failures, windowStartedAt, lastFailureAt })

describe('login throttle rules', () => {
  it('lets the free failures pass, then doubles the wait per further failure up to the cap', () => {
    assert.deepEqual([0, 4].map((f) => delayAfterMs(f, 5, policy)), [0, 0])
    assert.deepEqual([5, 6, 7, 8, 14].map((f) => delayAfterMs(f, 5, policy)), [1000, 2000, 4000, 8000, 512_000])
    assert.equal(delayAfterMs(15, 5, policy), 900_000, 'capped')
    assert.equal(delayAfterMs(5000, 5, policy), 900_000, 'a huge count stays capped (no overflow)')
  })

  it('counts from the last failure: blocked until its delay has passed', () => {
    assert.equal(allowedAt(count(4), 5, t0, policy), t0, 'under the bound: now')
    assert.equal(allowedAt(count(5, t0 + 10_000), 5, t0 + 10_000, policy), t0 + 11_000)
    assert.equal(allowedAt(count(7, t0 + 10_000), 5, t0 + 10_000, policy), t0 + 14_000)
    assert.deepEqual(decide({ account: count(5) }, t0 + 400, policy), { allowed: false, retryAfterMs: 600, scopes: ['account'] })
    assert.deepEqual(decide({ account: count(5) }, t0 + 1000, policy), { allowed: true })
  })

  it('forgets a count whose window is over, and never blocks past the window\'s end', () => {
    assert.equal(liveFailures(count(50), t0 + 899_999, policy), 50)
    assert.equal(liveFailures(count(50), t0 + 900_000, policy), 0)
    assert.equal(liveFailures(undefined, t0, policy), 0)
    // 14 failures, the last one 600 s into the window: its 512 s wait would end after the window.
    assert.equal(allowedAt(count(14, t0 + 600_000), 5, t0 + 600_000, policy), t0 + 900_000)
    assert.deepEqual(decide({ account: count(14, t0 + 600_000) }, t0 + 900_000, policy), { allowed: true })
  })

  it('counts checks under way as failures made now: the sixth of six sent at once is decided like a sixth in turn', () => {
    assert.equal(withChecksInFlight(count(2), 0, t0, policy)?.failures, 2, 'none under way: the stored count')
    assert.equal(withChecksInFlight(undefined, 0, t0, policy), undefined)
    // No stored failure, five checks under way: a sixth would be the account's sixth failure.
    assert.deepEqual(withChecksInFlight(undefined, 5, t0 + 50, policy), { failures: 5, windowStartedAt: t0 + 50, lastFailureAt: t0 + 50 })
    assert.deepEqual(decide({ account: withChecksInFlight(undefined, 4, t0, policy) }, t0, policy), { allowed: true })
    assert.deepEqual(decide({ account: withChecksInFlight(undefined, 5, t0, policy) }, t0, policy), { allowed: false, retryAfterMs: 1000, scopes: ['account'] })
    // Added to a live window's count, in that window; an expired window counts as none.
    assert.deepEqual(withChecksInFlight(count(3), 2, t0 + 10_000, policy), { failures: 5, windowStartedAt: t0, lastFailureAt: t0 + 10_000 })
    assert.deepEqual(withChecksInFlight(count(30), 1, t0 + 900_000, policy), { failures: 1, windowStartedAt: t0 + 900_000, lastFailureAt: t0 + 900_000 })
  })

  it('keeps the checks under way per key, each ended once, and those that ended since a read began', () => {
    const checks = new ChecksUnderWay()
    const keys = { account: 'a@example.com', address: '192.0.2.1' }
    const readBefore = checks.now()
    const first = checks.begin(keys)
    const second = checks.begin({ account: 'a@example.com', address: '192.0.2.2' })
    const since = checks.now()
    assert.deepEqual([checks.count('account', 'a@example.com', since), checks.count('address', '192.0.2.1', since), checks.count('address', '192.0.2.2', since)], [2, 1, 1])
    first()
    first()
    const readAfter = checks.now()
    // Ended after the read began: its failure may not be in what that read saw, so it still counts there.
    assert.deepEqual([checks.count('account', 'a@example.com', readBefore), checks.count('address', '192.0.2.1', readBefore)], [2, 1])
    assert.deepEqual([checks.count('account', 'a@example.com', readAfter), checks.count('address', '192.0.2.1', readAfter)], [1, 0], 'a read after it sees its failure; a second end changes nothing')
    assert.deepEqual([checks.underWay('account', 'a@example.com'), checks.underWay('address', '192.0.2.1')], [1, 0])
    second()
    assert.equal(checks.size(), 3, 'ended checks are remembered a while')
    assert.equal(checks.size(checks.now() + 60_000), 0, 'then forgotten, keys and all')
  })

  it('wakes a waiting check when a check of a key that holds it back ends; gives up at its deadline or when its client leaves', async () => {
    const checks = new ChecksUnderWay()
    const keys = { account: 'b@example.com', address: '192.0.2.3' }
    const end = checks.begin(keys)
    const woken = checks.waitForEnd({ account: 'b@example.com', address: '192.0.2.9' }, ['account'], checks.now() + 60_000)
    end()
    assert.equal(await woken, 'account', 'the account\'s check ended')
    const still = checks.begin(keys)
    assert.equal(await checks.waitForEnd(keys, ['account', 'address'], checks.now() + 20), null, 'the deadline came first')
    const controller = new AbortController()
    const waiting = checks.waitForEnd(keys, ['address'], checks.now() + 60_000, controller.signal)
    controller.abort()
    assert.equal(await waiting, null, 'the client left')
    still()
    assert.equal(checks.size(checks.now() + 60_000), 0, 'no waiter or key left behind')
  })

  it('wakes only checks held back by the key whose check ended, one per key', async () => {
    const checks = new ChecksUnderWay()
    // Two checks of account A wait, each for room on its own address only; a check of (A, X) ends.
    const endAx = checks.begin({ account: 'a@example.com', address: '192.0.2.20' })
    const endBy = checks.begin({ account: 'b@example.com', address: '192.0.2.21' })
    const woken: string[] = []
    const onY = checks.waitForEnd({ account: 'a@example.com', address: '192.0.2.21' }, ['address'], checks.now() + 60_000).then((scope) => { woken.push(`Y ${String(scope)}`) })
    const onX = checks.waitForEnd({ account: 'a@example.com', address: '192.0.2.20' }, ['address'], checks.now() + 60_000).then((scope) => { woken.push(`X ${String(scope)}`) })
    endAx()
    await onX
    assert.deepEqual(woken, ['X address'], 'the check held back by X is woken; the one held back by Y is not')
    endBy()
    await onY
    assert.deepEqual(woken, ['X address', 'Y address'])
    // passOn wakes the next of the named scopes only.
    const endC = checks.begin({ account: 'c@example.com', address: '192.0.2.22' })
    const first = checks.waitForEnd({ account: 'c@example.com', address: '192.0.2.22' }, ['account'], checks.now() + 60_000)
    checks.passOn({ account: 'c@example.com', address: '192.0.2.22' }, ['address'])
    assert.equal(await Promise.race([first, new Promise((resolve) => { setImmediate(() => { resolve('still waiting') }) })]), 'still waiting')
    checks.passOn({ account: 'c@example.com', address: '192.0.2.22' }, ['account'])
    assert.equal(await first, 'account')
    endC()
  })

  it('a check refused on recorded failures wakes every check waiting on that key: they read together, all refused, none left to its deadline', async () => {
    const checks = new ChecksUnderWay()
    const keys = { account: 'guessed@example.com', address: '192.0.2.30' }
    // Five wrong guesses under way; twenty more arrive and wait, since each would be a sixth.
    const ends = Array.from({ length: 5 }, () => checks.begin(keys))
    let recorded = 0
    let reading = 0
    let mostReadingAtOnce = 0
    let reads = 0
    const read = async (): Promise<{ failures: { account: FailureCount | undefined } }> => {
      reads++
      mostReadingAtOnce = Math.max(mostReadingAtOnce, ++reading)
      await new Promise((resolve) => { setImmediate(resolve) })
      reading--
      return { failures: { account: recorded === 0 ? undefined : count(recorded, Date.now(), Date.now()) } }
    }
    const rules = { checks, policy, now: Date.now, waitUntil: checks.now() + 60_000 }
    const outcomes = Array.from({ length: 20 }, async () => await startPasswordCheck(read, () => keys, rules, silentLogging).then(() => 'started', (err: { code?: string }) => String(err.code)))
    await waitFor('the twenty first reads', () => reads === 20 && reading === 0, { intervalMs: 1 })
    mostReadingAtOnce = 0
    // The five failures are written, then their checks end.
    recorded = 5
    for (const end of ends) end()
    assert.deepEqual(new Set(await Promise.all(outcomes)), new Set(['TOO_MANY_ATTEMPTS']), 'all twenty refused 429')
    assert.equal(reads, 40, 'each read once more')
    // Without the wake-up of all, each refusal handed the room on to one waiter: at most the five ends' five reads at once.
    assert.ok(mostReadingAtOnce >= 15, `the waiters read again together (at most ${mostReadingAtOnce} at once)`)
    assert.equal(checks.size(checks.now() + 60_000), 0, 'no waiter left behind')
  })

  it('a woken check held back again keeps its place: it is woken before the checks that came after it', async () => {
    const checks = new ChecksUnderWay()
    const keys = { account: 'busy@example.com', address: '192.0.2.40' }
    // Five checks under way: a sixth would pass the free failures were they all to fail, so it waits.
    const ends = Array.from({ length: 5 }, () => checks.begin(keys))
    let readsDone = 0
    const read = async (): Promise<{ failures: { account: FailureCount | undefined } }> => {
      await new Promise((resolve) => { setImmediate(resolve) })
      readsDone++
      return { failures: { account: undefined } }
    }
    const rules = { checks, policy, now: Date.now, waitUntil: checks.now() + 20_000 }
    const started: string[] = []
    const checkEnds: Array<() => void> = []
    const check = async (name: string): Promise<void> => {
      const { end } = await startPasswordCheck(read, () => keys, rules, silentLogging)
      started.push(name)
      checkEnds.push(end)
    }
    const first = check('first')
    await waitFor('the first check waiting', () => readsDone === 1, { intervalMs: 1 })
    const later = [check('second'), check('third')]
    await waitFor('the second and third waiting behind it', () => readsDone === 3, { intervalMs: 1 })
    // A check ends and wakes the first; a newcomer reads in the same moment and takes the room,
    // so the first, reading again, is held back again.
    ends[0]?.()
    const newcomer = check('newcomer')
    await newcomer
    await waitFor('the first read again', () => readsDone === 5, { intervalMs: 1 })
    assert.deepEqual(started, ['newcomer'])
    // The next room is the first's, not the second's: it went back to its place, not behind the others.
    ends[1]?.()
    await waitFor('the next check started', () => started.length === 2, { intervalMs: 1 })
    assert.deepEqual(started, ['newcomer', 'first'])
    await first
    for (const end of ends.slice(2)) end()
    await Promise.all(later)
    assert.deepEqual(started, ['newcomer', 'first', 'second', 'third'])
    for (const end of checkEnds) end()
    assert.equal(checks.size(checks.now() + 60_000), 0, 'no waiter left behind')
  })

  it('a check whose keys are known before its read waits for its account\'s room before reading: in a crowd each read starts a check, first come first served', async () => {
    const checks = new ChecksUnderWay()
    const keys = { account: 'crowd@example.com', address: '192.0.2.45' }
    // Five checks under way fill the account's room: with no failure recorded, a sixth could fail past the free five.
    const ends = Array.from({ length: 5 }, () => checks.begin(keys))
    let reads = 0
    let waiting = 0
    const read = async (): Promise<{ failures: { account: FailureCount | undefined } }> => {
      reads++
      await new Promise((resolve) => { setImmediate(resolve) })
      return { failures: { account: undefined } }
    }
    const rules = { checks, policy, now: Date.now, waitUntil: checks.now() + 20_000, presumedKeys: keys, beforeWait: () => { waiting++ } }
    const started: number[] = []
    const crowd = Array.from({ length: 20 }, async (_, arrival) => {
      const { end } = await startPasswordCheck(read, () => keys, rules, silentLogging)
      started.push(arrival)
      return end
    })
    await waitFor('the twenty waiting', () => waiting === 20, { intervalMs: 1 })
    assert.equal(reads, 0, 'none read while the room was taken')
    // Each check that ends lets the next in line read and start; the room stays full.
    const running = [...ends]
    while (running.length > 0) {
      running.shift()?.()
      const before = started.length
      if (before === 20) continue
      await waitFor('the next check started', () => started.length === before + 1, { intervalMs: 1 })
      running.push(await crowd[started.at(-1) ?? 0] ?? (() => {}))
    }
    assert.equal(reads, 20, 'one read a check')
    assert.deepEqual(started, Array.from({ length: 20 }, (_, arrival) => arrival), 'in the order they came')
    assert.equal(checks.size(checks.now() + 60_000), 0, 'no waiter left behind')
  })

  it('a check that waited before reading is refused on the failures its read finds, with every check waiting on the account', async () => {
    const checks = new ChecksUnderWay()
    const keys = { account: 'guessed-again@example.com', address: '192.0.2.46' }
    const ends = Array.from({ length: 5 }, () => checks.begin(keys))
    let recorded = 0
    let reads = 0
    let waiting = 0
    const read = async (): Promise<{ failures: { account: FailureCount | undefined } }> => {
      reads++
      await new Promise((resolve) => { setImmediate(resolve) })
      return { failures: { account: recorded === 0 ? undefined : count(recorded, Date.now(), Date.now()) } }
    }
    const rules = { checks, policy, now: Date.now, waitUntil: checks.now() + 60_000, presumedKeys: keys, beforeWait: () => { waiting++ } }
    const outcomes = Array.from({ length: 20 }, async () => await startPasswordCheck(read, () => keys, rules, silentLogging).then(() => 'started', (err: { code?: string }) => String(err.code)))
    await waitFor('the twenty waiting', () => waiting === 20, { intervalMs: 1 })
    // The five checks under way were wrong guesses: their failures are written, then they end.
    recorded = 5
    for (const end of ends) end()
    assert.deepEqual(new Set(await Promise.all(outcomes)), new Set(['TOO_MANY_ATTEMPTS']), 'all twenty refused 429, none hashed')
    assert.equal(reads, 20, 'each read once, after its wait')
    assert.equal(checks.size(checks.now() + 60_000), 0, 'no waiter left behind')
  })

  it('a check gives back its hash queue place while it waits for its account\'s other checks, and is admitted again once woken', async () => {
    // Fifty logins of one account at once: five checks run, the rest wait. Holding their places,
    // the waiting ones counted each other as queued ahead and were refused.
    const checks = new ChecksUnderWay()
    const keys = { account: 'crowded@example.com', address: '192.0.2.50' }
    const ends = Array.from({ length: 5 }, () => checks.begin(keys))
    let releases = 0
    let readmissions = 0
    const place = (): QueuePlace => new QueuePlace('verify', Number.POSITIVE_INFINITY, () => { releases++ })
    const request: AdmissionRequest = { kind: 'verify', deadlineAt: checks.now() + 20_000, client: '192.0.2.50', signal: undefined }
    const ticket = new AdmissionTicket(request, place(), () => { readmissions++; return place() })
    const rules = passwordCheckRules({ checksUnderWay: checks, loginThrottle: policy }, ticket)
    const read = async (): Promise<{ failures: { account: FailureCount | undefined } }> => ({ failures: { account: undefined } })
    const started = startPasswordCheck(read, () => keys, rules, silentLogging)
    await waitFor('the check waiting, its place given back', () => !ticket.holdsPlace, { intervalMs: 1 })
    assert.equal(releases, 1)
    assert.equal(readmissions, 0, 'not admitted again while it waits')
    ends[0]?.()
    const { end } = await started
    assert.equal(readmissions, 1, 'admitted again once, after its wait')
    assert.ok(ticket.holdsPlace, 'with a place of its own again')
    end()
    for (const other of ends.slice(1)) other()
    assert.equal(releases, 1, 'once')
  })

  it('a check that waited and cannot be admitted again is refused with admission\'s answer', async () => {
    const checks = new ChecksUnderWay()
    const keys = { account: 'late@example.com', address: '192.0.2.51' }
    const endFirst = Array.from({ length: 5 }, () => checks.begin(keys))
    const overloaded = Object.assign(new Error('queue full'), { code: 'SERVICE_OVERLOADED' })
    const request: AdmissionRequest = { kind: 'verify', deadlineAt: checks.now() + 20_000, client: '192.0.2.51', signal: undefined }
    const ticket = new AdmissionTicket(request, new QueuePlace('verify', Number.POSITIVE_INFINITY, () => {}), () => { throw overloaded })
    const read = async (): Promise<{ failures: { account: FailureCount | undefined } }> => ({ failures: { account: undefined } })
    const started = startPasswordCheck(read, () => keys, passwordCheckRules({ checksUnderWay: checks, loginThrottle: policy }, ticket), silentLogging)
    await waitFor('the check waiting', () => !ticket.holdsPlace, { intervalMs: 1 })
    endFirst[0]?.()
    await assert.rejects(started, overloaded)
    for (const end of endFirst.slice(1)) end()
    assert.equal(checks.size(checks.now() + 60_000), 0, 'no waiter left behind')
  })

  it('a check\'s later forms run without the client\'s signal, its first is kept once started, and a later form that cannot run counts as not matching', async () => {
    const signal = new AbortController().signal
    const ticket = new AdmissionTicket({ kind: 'verify', deadlineAt: 1000, client: '192.0.2.60', signal }, undefined, () => undefined)
    const seen: Array<{ form: string, ticket: boolean, signal: boolean, deadlineAt: number | undefined, keepIfStarted: boolean }> = []
    const verify = (results: Array<boolean | Error>) => async (form: string, options: HashOptions) => {
      seen.push({ form, ticket: options.ticket === ticket, signal: options.signal !== undefined, deadlineAt: options.deadlineAt, keepIfStarted: options.keepIfStarted === true })
      const result = results[seen.length - 1]
      if (result instanceof Error) throw result
      return { match: result === true, needsRehash: false }
    }
    const forms = ['nfc', 'typed']
    assert.deepEqual(await verifyFormsOfCheck(forms, ticket, verify([false, true])), { match: true, needsRehash: false, form: 'typed' })
    assert.deepEqual(seen, [
      { form: 'nfc', ticket: true, signal: false, deadlineAt: undefined, keepIfStarted: true },
      { form: 'typed', ticket: false, signal: false, deadlineAt: 1000, keepIfStarted: false },
    ], 'the first under the ticket (its signal and place), kept once started; the later with its deadline alone')
    seen.length = 0
    const overloaded = new Error('queue full')
    assert.deepEqual(await verifyFormsOfCheck(forms, ticket, verify([false, overloaded])), { match: false, needsRehash: false, form: 'nfc', unfinished: overloaded })
    seen.length = 0
    await assert.rejects(verifyFormsOfCheck(forms, ticket, verify([overloaded])), overloaded, 'the first form\'s refusal is the answer: no verify ran')
    seen.length = 0
    assert.deepEqual(await verifyFormsOfCheck(['nfc'], ticket, verify([true])), { match: true, needsRehash: false, form: 'nfc' })
  })

  it('says when no check is under way any more (the close waits for that)', async () => {
    const checks = new ChecksUnderWay()
    await checks.whenIdle()
    const endFirst = checks.begin({ account: 'idle@example.com', address: '192.0.2.40' })
    const endSecond = checks.begin({ account: 'other@example.com', address: '192.0.2.41' })
    let idle = false
    const waiting = checks.whenIdle().then(() => { idle = true })
    endFirst()
    endFirst()
    await new Promise((resolve) => { setImmediate(resolve) })
    assert.equal(idle, false, 'one still under way')
    endSecond()
    await waiting
    assert.equal(idle, true)
  })

  it('judges account and address apart, each against its own bound, and waits for the later', () => {
    assert.deepEqual(decide({ account: count(4), address: count(99) }, t0, policy), { allowed: true })
    assert.deepEqual(decide({ account: count(1), address: count(100) }, t0, policy), { allowed: false, retryAfterMs: 1000, scopes: ['address'] })
    assert.deepEqual(decide({ account: count(6), address: count(100) }, t0, policy), { allowed: false, retryAfterMs: 2000, scopes: ['account', 'address'] })
  })

  it('grows an address\'s bound with the accounts that signed in from it: an office behind one NAT is not refused by its own typos', () => {
    // 100 free failures, and 10 more for each account that signed in from the address in the window.
    assert.deepEqual(decide({ address: count(100) }, t0, policy), { allowed: false, retryAfterMs: 1000, scopes: ['address'] })
    assert.deepEqual(decide({ address: count(100) }, t0, policy, 3), { allowed: true })
    assert.deepEqual(decide({ address: count(129) }, t0, policy, 3), { allowed: true })
    assert.deepEqual(decide({ address: count(130) }, t0, policy, 3), { allowed: false, retryAfterMs: 1000, scopes: ['address'] })
    // The account's own bound does not grow with it.
    assert.deepEqual(decide({ account: count(5), address: count(0) }, t0, policy, 3), { allowed: false, retryAfterMs: 1000, scopes: ['account'] })
  })

  it('reads again, counting the address\'s accounts, when a read that did not count them finds the address at its bound with the checks under way', async () => {
    const checks = new ChecksUnderWay()
    const keys = { account: 'office@example.com', address: '192.0.2.46' }
    // 95 failures recorded, 5 checks of other accounts from the address under way: 100, the bound without accounts.
    const others = Array.from({ length: 5 }, (_, i) => checks.begin({ account: `colleague-${i}@example.com`, address: keys.address }))
    const reads: boolean[] = []
    const read = async (countAddressAccounts: boolean): Promise<{ failures: { address: FailureCount }, addressAccounts: number | undefined }> => {
      reads.push(countAddressAccounts)
      return { failures: { address: count(95, Date.now(), Date.now()) }, addressAccounts: countAddressAccounts ? 3 : undefined }
    }
    const rules = { checks, policy, now: Date.now, waitUntil: checks.now() + 20_000 }
    const { end } = await startPasswordCheck(read, () => keys, rules, silentLogging)
    assert.deepEqual(reads, [false, true], 'the second read counted them: three accounts raise the bound to 130, and the check starts')
    end()
    // Below the bound even with its checks under way: one read, the accounts never counted.
    reads.length = 0
    others.pop()?.()
    const below = async (countAddressAccounts: boolean): Promise<{ failures: { address: FailureCount }, addressAccounts: number | undefined }> => {
      reads.push(countAddressAccounts)
      return { failures: { address: count(90, Date.now(), Date.now()) }, addressAccounts: undefined }
    }
    ;(await startPasswordCheck(below, () => keys, rules, silentLogging)).end()
    assert.deepEqual(reads, [false])
    for (const other of others) other()
  })
})

describe('client address keys', () => {
  it('keeps IPv4, unwraps IPv4-mapped IPv6, and counts other IPv6 by its /64', () => {
    assert.equal(addressKey('203.0.113.7'), '203.0.113.7')
    assert.equal(addressKey('::ffff:127.0.0.1'), '127.0.0.1')
    assert.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64')
    assert.equal(addressKey('2001:DB8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64', 'another address of the same /64')
    assert.equal(addressKey('::1'), '0:0:0:0::/64')
    assert.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64')
    assert.equal(addressKey('x'.repeat(500)).length, 64, 'a non-address is cut to a bounded key')
  })
})

describe('throttle and proxy settings', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({ env: {} })
    assert.deepEqual(loginThrottlePolicy(config), { accountFreeFailures: 5, addressFreeFailures: 100, addressFreeFailuresPerAccount: 10, deviceFreeFailures: 10, windowMs: 900_000, baseDelayMs: 1000, maxDelayMs: 900_000 })
    assert.equal(config.trustProxy, false)
  })

  it('reads TOLLBOOTH_TRUST_PROXY as true/false, a hop count, or a list of addresses and CIDRs', () => {
    assert.equal(parseTrustProxy('true'), true)
    assert.equal(parseTrustProxy('FALSE'), false)
    assert.equal(parseTrustProxy('2'), 2)
    assert.deepEqual(parseTrustProxy('10.0.0.0/8, 192.168.1.1,fd00::/8, loopback, 172.16.0.0/255.240.0.0'), ['10.0.0.0/8', '192.168.1.1', 'fd00::/8', 'loopback', '172.16.0.0/255.240.0.0'])
    assert.deepEqual(loadConfig({ env: { TOLLBOOTH_TRUST_PROXY: '127.0.0.1' } }).trustProxy, ['127.0.0.1'])
    for (const bad of ['maybe', '10.0.0.0/33', '10.0.0.1,', '1.2.3.4/8/8', '::1/129', ',']) {
      assert.throws(() => loadConfig({ env: { TOLLBOOTH_TRUST_PROXY: bad } }), (err: { code?: string, message: string }) => err.code === 'CONFIG_INVALID' && err.message.includes('TOLLBOOTH_TRUST_PROXY'), bad)
    }
  })

  it('turns a hop count into trusting that many nearest hops (Fastify alone would trust none)', () => {
    const trust = fastifyTrustProxy(2)
    assert.equal(typeof trust, 'function')
    if (typeof trust !== 'function') return
    assert.deepEqual([0, 1, 2].map((hop) => trust('10.0.0.1', hop)), [true, true, false])
    assert.equal(fastifyTrustProxy(0), false)
    assert.deepEqual(fastifyTrustProxy(['10.0.0.0/8']), ['10.0.0.0/8'])
  })

  it('refuses a longest wait beyond the window', () => {
    assert.throws(() => loadConfig({ env: { TOLLBOOTH_LOGIN_THROTTLE_WINDOW_SECONDS: '60', TOLLBOOTH_LOGIN_THROTTLE_MAX_DELAY_SECONDS: '120' } }),
      (err: { code?: string, message: string }) => err.code === 'CONFIG_INVALID' && /MAX_DELAY_SECONDS.*must not exceed.*WINDOW_SECONDS/.test(err.message))
  })
})
