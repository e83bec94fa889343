/**
 * A password check (a login, or a signed-in user giving their password again): decided by the
 * throttle before any hash, then verified under the request's ticket, each form of the typed
 * password in turn; an unknown account costs what a wrong password costs.
 */
import type { FastifyBaseLogger } from 'fastify'
import { createError, isTollboothError } from '../errors.js'
import { hashDeadlineAt, type HashOptions, type HashTicket, type PasswordEngine, type VerifyResult } from '../hashing/index.js'
import { randomInt } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { claimCheck, type FailureCount, type Queryable, recordFailure, releaseCheck, type FailureCounts, type ThrottleClock, type ThrottleKeys, type ThrottleScope } from '../db/index.js'
import { decide, freeFailures, windowExpiredAtOrBefore, withChecksInFlight, type LoginThrottlePolicy } from './login-throttle.js'
import type { ChecksUnderWay } from './checks-under-way.js'

/** A request whose route hashes, as the account rules see it. */
export interface HashedRequest {
  /** Its admission ticket (overload/hash-admission.ts): the deadline, client and signal of its first hash. */
  ticket: HashTicket
  /** When it arrived, in performance.now() time: a second hash's deadline counts from here too. */
  receivedAt: number
  /** The User-Agent a new session records. */
  userAgent?: string | undefined
  /** The device token the client presented (a cookie or a header: sign-in/devices.ts), if it has the shape of one. */
  deviceToken?: string | undefined
}

/** A second hash of the request (a new password): due `deadlineMs` after its arrival, in the ticket's turn, admitted when queued. */
export function laterHashOptions (request: HashedRequest, deadlineMs: number): HashOptions {
  const { client, signal } = request.ticket
  return { deadlineAt: hashDeadlineAt(request.receivedAt, deadlineMs), client, ...(signal === undefined ? {} : { signal }) }
}

/** A verify's result, with the form of the typed password that matched (undefined: none tried). */
export interface VerifiedForm extends VerifyResult {
  form: string | undefined
  /** Why a later form could not be verified (the queue, the deadline): the answer once the failure is counted. */
  unfinished?: unknown
}

/**
 * The verifies of one password check, one per form of the typed password (NFC first), stopping
 * at the first match. Once a verify has started, the answer's timing tells the client something,
 * so the check is decided and its failure counted whatever the client does: the first form may be
 * cancelled only while queued (`keepIfStarted`), later forms run without the client's signal, and
 * a later form that cannot run counts as not matching. Otherwise hanging up mid-way would skip
 * the count and allow unlimited guesses.
 */
export async function verifyFormsOfCheck (forms: readonly string[], ticket: HashTicket, verifyForm: (form: string, options: HashOptions) => Promise<VerifyResult>): Promise<VerifiedForm> {
  let result: VerifiedForm = { match: false, needsRehash: false, form: undefined }
  // The later forms: the ticket's deadline and turn, without its client's signal (the first took the place).
  const afterFirst: HashOptions = { ...(ticket.deadlineAt === undefined ? {} : { deadlineAt: ticket.deadlineAt }), client: ticket.client }
  for (const [index, form] of forms.entries()) {
    let verified: VerifyResult
    try {
      verified = await verifyForm(form, index === 0 ? { ticket, keepIfStarted: true } : afterFirst)
    } catch (err) {
      if (index === 0) throw err
      return { ...result, match: false, unfinished: err }
    }
    result = { ...verified, form }
    if (verified.match) break
  }
  return result
}

/** Hashes a new password the policy accepted, through the pool; PASSWORD_TOO_LONG names the body's field. */
export async function hashAcceptedPassword (engine: PasswordEngine, password: string, field: string, options: HashOptions): Promise<string> {
  try {
    return await engine.hash(password, options)
  } catch (err) {
    if (isTollboothError(err, 'PASSWORD_TOO_LONG')) throw createError('PASSWORD_TOO_LONG', err.message, { field })
    throw err
  }
}

/** A stored hash's check: the forms' verdict, and whether the engine refused the stored hash itself. */
export interface StoredPasswordCheck extends VerifiedForm {
  /** The stored hash could not be computed (out of bounds, an unknown format): answered as a wrong password. */
  storedHashRefused?: true
}

/**
 * Verifies the forms of a typed password (password-policy.ts passwordForms) against a user's
 * stored hash. A stored hash the engine refuses (a bad import, a tampered row) is the operator's
 * problem: it is logged and answered as a wrong password at a wrong password's cost, so the
 * account cannot be told apart. `check` names the caller (login, re-authentication) in the log.
 */
export async function verifyPasswordForms (deps: { engine: PasswordEngine, log: FastifyBaseLogger }, forms: readonly string[], user: { id: string, passwordHash: string | null }, ticket: HashTicket, check: string): Promise<StoredPasswordCheck> {
  const { passwordHash } = user
  // An account without a password (passkeys only) is answered as a wrong password, at its cost.
  if (passwordHash === null) return { match: false, needsRehash: false, form: undefined, unfinished: await verifyDummyForms(deps.engine, forms, ticket) }
  try {
    return await verifyFormsOfCheck(forms, ticket, async (form, options) => await deps.engine.verify(form, passwordHash, options))
  } catch (err) {
    if (!isTollboothError(err, 'HASH_PARAMS_OUT_OF_BOUNDS') && !isTollboothError(err, 'HASH_FORMAT_UNKNOWN')) throw err
    deps.log.error({ userId: user.id, code: err.code, reason: err.message }, `stored password hash refused; the ${check} is answered as a wrong password`)
    return { match: false, needsRehash: false, form: undefined, storedHashRefused: true, unfinished: await verifyDummyForms(deps.engine, forms, ticket) }
  }
}

/** One dummy verify per form, as a wrong password for a known account costs; returns a later form's refusal, if any. */
export async function verifyDummyForms (engine: PasswordEngine, forms: readonly string[], ticket: HashTicket): Promise<unknown> {
  return (await verifyFormsOfCheck(forms, ticket, async (form, options) => {
    await engine.verifyDummy(form, options)
    return { match: false, needsRehash: false }
  })).unfinished
}

/** What a password check (a login, or a signed-in user giving their password again) logs with its throttle events. */
export interface PasswordCheckLog {
  log: FastifyBaseLogger
  /** The log line's message for a throttled check, and for a failed one. */
  throttled: string
  failed: string
  /** Fields added to both lines (e.g. `reauthentication: true`). */
  fields?: Record<string, unknown>
}

/** The present keys' scopes. */
function scopesOf (keys: ThrottleKeys): ThrottleScope[] {
  return (['account', 'address', 'device'] as const).filter((scope) => keys[scope] !== undefined)
}

/** Throws TOO_MANY_ATTEMPTS (a security event) when the throttle refuses the check, first waking the checks waiting on those keys. */
function assertNotThrottled (failures: FailureCounts, keys: ThrottleKeys, nowMs: number, rules: PasswordCheckRules, logging: PasswordCheckLog, addressAccounts: number): void {
  const counts: FailureCounts = {}
  for (const scope of scopesOf(keys)) counts[scope] = failures[scope]
  const decision = decide(counts, nowMs, rules.policy, addressAccounts)
  if (decision.allowed) return
  rules.checks.wakeAll(keys, decision.scopes)
  const retryAfterSeconds = Math.ceil(decision.retryAfterMs / 1000)
  logging.log.warn({
    event: 'login_throttled',
    ...throttleFields(keys, failures),
    scopes: decision.scopes,
    retryAfterSeconds,
    ...logging.fields,
  }, logging.throttled)
  throw createError('TOO_MANY_ATTEMPTS', undefined, { retryAfterSeconds })
}

/** The keys and their failure counts as the security log records them: a device by a prefix of its token's hash, never the token. */
function throttleFields (keys: ThrottleKeys, failures: FailureCounts): Record<string, unknown> {
  return {
    ...(keys.account === undefined ? {} : { account: keys.account, accountFailures: failures.account?.failures ?? 0 }),
    ...(keys.address === undefined ? {} : { address: keys.address, addressFailures: failures.address?.failures ?? 0 }),
    ...(keys.device === undefined ? {} : { device: keys.device.slice(0, 12), deviceFailures: failures.device?.failures ?? 0 }),
  }
}

/** What `startPasswordCheck` decides a check by, and how long it may wait. */
export interface PasswordCheckRules {
  checks: ChecksUnderWay
  policy: LoginThrottlePolicy
  now: () => number
  /** Until when (performance.now() time) it may wait for its keys' other checks. */
  waitUntil: number
  signal?: AbortSignal | undefined
  /** Called as the check starts to wait for others of its keys. */
  beforeWait?: () => void
  /** Called when such a wait ended, before the counts are read again; may throw to refuse the check. */
  afterWait?: () => void
  /** The bound on an account's checks under way across every process (its lease in PostgreSQL); none: this process's alone. */
  lease?: CheckLease | undefined
  /**
   * The keys the read will give, when they are known before it (a login without a device token:
   * its account's and its address's). A check whose account has no room even at no recorded
   * failure, this process's checks under way taking it all, then waits for one to end before it
   * reads: a read could only find it held back, and a crowd on one account would read twice a login.
   */
  presumedKeys?: ThrottleKeys | undefined
}

/** What a service's password checks share: the throttle's policy, the checks under way, the clock, the database. */
export interface PasswordCheckDeps {
  checksUnderWay: ChecksUnderWay
  loginThrottle: LoginThrottlePolicy
  /** Wall-clock time in epoch ms (tests pass their own); default Date.now. */
  now?: (() => number) | undefined
  /**
   * Where the leases of checks under way are kept, for every process that signs in on the database;
   * none: this process is the only one (the embedded database it started), and its own count of
   * checks under way bounds them all.
   */
  checkLeases?: Queryable | undefined
}

/** How long after its hash's deadline a check's lease runs out: a verify that started in time runs to its end, then its outcome is written. */
const leaseMarginMs = 10_000

/**
 * An account's check under way as every process sees it: a lease in PostgreSQL (db/accounts/login-throttle.ts
 * `claimCheck`) that the check's outcome gives back, and that runs out on its own if the process
 * dies first. Checks sent to several replicas at once are bounded as checks sent to one are.
 */
class CheckLease {
  /** The lease, a timestamp unique to this check (its expiry, to the microsecond); set once claimed. */
  token: string | undefined

  constructor (private readonly db: Queryable, private readonly expiresAtMs: number) {}

  /**
   * Takes the lease for `account` under `bound` (live failures plus checks under way): the count
   * as it stands under the lease's lock, or `full` when there is no room.
   */
  async claim (account: string, bound: number, at: ThrottleClock): Promise<{ full: true } | { full: false, count: FailureCount | undefined }> {
    const token = leaseStamp(this.expiresAtMs)
    const claimed = await claimCheck(this.db, account, token, bound, at)
    if (!claimed.granted) return { full: true }
    this.token = token
    return { full: false, count: claimed.count }
  }

  /** The lease to give back with the outcome's write (then forgotten here), if one is held. */
  take (): string | undefined {
    const token = this.token
    this.token = undefined
    return token
  }

  /** Gives back a lease no outcome's write gave back (the check ended without a verdict). */
  async release (account: string): Promise<void> {
    const token = this.take()
    if (token !== undefined) await releaseCheck(this.db, account, token)
  }
}

/** An ISO timestamp at `ms` with three random digits of microseconds: unique among an account's leases. */
function leaseStamp (ms: number): string {
  const iso = new Date(ms).toISOString()
  return `${iso.slice(0, -1)}${String(randomInt(1000)).padStart(3, '0')}Z`
}

/**
 * The rules of a password check made under a request's ticket: it may wait until the ticket's
 * hash is due, stops when its client leaves, and gives its queue place back while it waits (or
 * checks waiting on one account would count each other as queued ahead), to be readmitted after.
 */
export function passwordCheckRules (deps: PasswordCheckDeps, ticket: HashTicket): PasswordCheckRules {
  if (ticket.deadlineAt === undefined) throw new TypeError('a password check needs a ticket with a deadline')
  const now = deps.now ?? Date.now
  return {
    checks: deps.checksUnderWay,
    policy: deps.loginThrottle,
    now,
    waitUntil: ticket.deadlineAt,
    signal: ticket.signal,
    beforeWait: () => { ticket.release() },
    afterWait: () => { ticket.readmit() },
    lease: deps.checkLeases === undefined ? undefined : new CheckLease(deps.checkLeases, now() + (ticket.deadlineAt - performance.now()) + leaseMarginMs),
  }
}

/** How long a check that found its account's room taken by other processes' checks waits before it reads again. */
const remoteCheckPauseMs = 25

/**
 * Reads the throttle's counts and decides a password check on them, before any hash:
 * TOO_MANY_ATTEMPTS on the recorded failures. Otherwise the check starts only if it would still
 * pass were every check under way for its keys to fail; if not, it waits for one to end and reads
 * again (checks-under-way.ts), until `waitUntil` (then SERVICE_OVERLOADED) or its client leaves
 * (HASH_CANCELLED); `afterWait` may refuse it. An account's check also takes its lease, the bound
 * across processes: where other processes' checks fill it, it reads again a moment later. The
 * keys come from each read (`keysOf`: a known device's own key, or the account's and address's).
 * Returns the last read, its keys and `end`, to call once the outcome is recorded.
 */
export async function startPasswordCheck<T extends { failures: FailureCounts, addressAccounts?: number | undefined }> (
  read: (countAddressAccounts: boolean) => Promise<T>,
  keysOf: (found: T) => ThrottleKeys,
  rules: PasswordCheckRules,
  logging: PasswordCheckLog
): Promise<{ found: T, keys: ThrottleKeys, end: () => void }> {
  const { checks, policy, now, waitUntil, signal, beforeWait, afterWait, lease, presumedKeys } = rules
  /** The scope whose check's end woke this one, until it takes that room or hands it on. */
  let wokenBy: ThrottleScope | undefined
  /** Its place in the queues of checks waiting, kept from its first wait on. */
  let place: number | undefined
  let keys: ThrottleKeys = {}
  /** Waits, in its place, for a check of `blocking`'s keys to end: the scope that woke it, or a refusal at its deadline or when its client leaves. */
  const waitForRoom = async (blocking: readonly ThrottleScope[]): Promise<void> => {
    place ??= checks.takePlace()
    beforeWait?.()
    const woke = await checks.waitForEnd(keys, blocking, waitUntil, signal, place)
    if (woke === null) {
      if (signal?.aborted === true) throw createError('HASH_CANCELLED', 'The client left while its password check waited for others of its account or address')
      throw createError('SERVICE_OVERLOADED', 'Other password checks of this account or address are still under way', { retryAfterSeconds: 1 })
    }
    wokenBy = woke
    afterWait?.()
  }
  try {
    if (presumedKeys?.account !== undefined && !roomAtNoFailures(checks.underWay('account', presumedKeys.account), now(), policy)) {
      keys = presumedKeys
      await waitForRoom(['account'])
    }
    /** Whether the next read counts the address's accounts whatever its recorded failures. */
    let countAddressAccounts = false
    for (;;) {
      const readStartedAt = checks.now()
      const found = await read(countAddressAccounts)
      keys = keysOf(found)
      const nowMs = now()
      // Not counted: the address's recorded failures are too few for its accounts to matter to them.
      const addressAccounts = found.addressAccounts ?? 0
      assertNotThrottled(found.failures, keys, nowMs, rules, logging, addressAccounts)
      const counts: FailureCounts = {}
      for (const scope of scopesOf(keys)) counts[scope] = withChecksInFlight(found.failures[scope], checks.count(scope, keys[scope] ?? '', readStartedAt), nowMs, policy)
      // With the checks under way, they may: read again, counting them.
      if (found.addressAccounts === undefined && !countAddressAccounts && (counts.address?.failures ?? 0) >= freeFailures('address', policy)) {
        countAddressAccounts = true
        continue
      }
      const decision = decide(counts, nowMs, policy, addressAccounts)
      if (decision.allowed) {
        const end = checks.begin(keys)
        if (lease === undefined || keys.account === undefined) return { found, keys, end }
        const at = { nowMs, windowExpiredAtOrBefore: windowExpiredAtOrBefore(nowMs, policy) }
        const claimed = await lease.claim(keys.account, freeFailures('account', policy), at)
        // Granted on a count another process's failure has overtaken since the read: read again.
        if (!claimed.full && decide({ account: claimed.count }, nowMs, policy).allowed) return { found, keys, end }
        if (!claimed.full) await lease.release(keys.account)
        // The account's room is taken by checks of other processes: they end within a verify.
        end()
        if (performance.now() + remoteCheckPauseMs >= waitUntil) throw createError('SERVICE_OVERLOADED', 'Other password checks of this account are still under way', { retryAfterSeconds: 1 })
        await pause(remoteCheckPauseMs, signal)
        continue
      }
      // Held back only by checks that have ended, whose failures are written: read again at once.
      const blocking = decision.scopes.filter((scope) => checks.underWay(scope, keys[scope] ?? '') > 0)
      if (blocking.length > 0) {
        // Woken for room it cannot take (its other key holds it back): the next check waiting may.
        if (wokenBy !== undefined && !blocking.includes(wokenBy)) checks.passOn(keys, [wokenBy])
        wokenBy = undefined
        await waitForRoom(blocking)
      }
    }
  } catch (err) {
    // Woken, then refused (a 429 now that the failures are written): the next waiting check is decided too.
    if (wokenBy !== undefined) checks.passOn(keys, [wokenBy])
    throw err
  }
}

/** Whether an account with `underWay` checks running has room for one more were none of its failures recorded: with more recorded, it has less. */
function roomAtNoFailures (underWay: number, nowMs: number, policy: LoginThrottlePolicy): boolean {
  return decide({ account: withChecksInFlight(undefined, underWay, nowMs, policy) }, nowMs, policy).allowed
}

/** Resolves after `ms`; rejects with HASH_CANCELLED when `signal` aborts first. */
async function pause (ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, signal === undefined ? {} : { signal })
  } catch (err) {
    if (signal?.aborted === true) throw createError('HASH_CANCELLED', 'The client left while its password check waited')
    throw err
  }
}

/**
 * Counts a failed password check for its keys (before answering), giving back its lease, and logs
 * it; never the password. Returns the counts after it.
 */
export async function recordFailedCheck (db: Queryable, keys: ThrottleKeys, reason: string, nowMs: number, policy: LoginThrottlePolicy, logging: PasswordCheckLog, lease?: string): Promise<FailureCounts> {
  const counts = await recordFailure(db, keys, { nowMs, windowExpiredAtOrBefore: windowExpiredAtOrBefore(nowMs, policy) }, lease)
  logging.log.info({
    event: 'login_failed',
    reason,
    ...throttleFields(keys, counts),
    ...logging.fields,
  }, logging.failed)
  return counts
}
