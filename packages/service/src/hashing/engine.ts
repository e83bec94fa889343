/**
 * The password engine's facade: it validates options once and fills defaults; the executor
 * behind it trusts its input. The main thread does only cheap string checks (limits.ts, bcrypt's
 * length, needsRehash); every hash runs in the executor's threads.
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { Type } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { createError, isTollboothError, type TollboothError } from '../errors.js'
import { detectCpuBudget, detectMemoryBudget, type CpuBudget } from '../machine/index.js'
import type { ExecutorFactory, ExecutorSettings, HashExecutor, HashTask, HashWork } from './executor.js'
import { bcryptMaxPasswordBytes, bcryptPasswordTooLong } from './hashers/index.js'
import { inspectStoredHash, validatePolicy, type StoredHash } from './limits.js'
import { describeMemoryMisfit, formatBytes, poolMemoryMisfit, storedMemoryBound, type StoredMemoryBound } from './memory-fit.js'
import { refusalOutcome, TollboothPool } from './pool.js'
import { storedDiffersFromPolicy } from './rehash.js'
import { AdmissionTicket, type AdmissionRequest } from './ticket.js'
import type {
  HashFaultLog, HashOptions, HashPolicy, HashPoolMemory, HashPoolStats, HashRequest, HashTaskEvent, HashTaskKind, HashTicket, PasswordEngine, PasswordEngineOptions, VerifyResult,
} from './types.js'
import { abortSignalSchema, admissionTicketSchema, firstFault } from './validate.js'
import { nextMeanRunMs } from './queue/index.js'

const maxThreads = 256
const maxQueueLimit = 1_000_000
/** Waiting requests per thread by default: 64 hashes of tens of ms are seconds of work, past any deadline. */
const defaultQueuePerThread = 64
const defaultPingTimeoutMs = 1000
const defaultThreadNice = 10
/** The longest wait added to a mismatch against an outdated hash. */
const maxPadMs = 5000

/** Options after validation, with every default filled: what the core trusts. */
interface FilledEngineOptions {
  policy: HashPolicy
  threads: number
  maxQueue: number
  threadNice: number
  cpuBudget: CpuBudget
  memory: HashPoolMemory
  log: HashFaultLog | undefined
}

/** The options besides the policy, which validatePolicy checks with its bounds and reasons. */
const EngineOptions = TypeCompiler.Compile(Type.Object({
  policy: Type.Optional(Type.Unknown()),
  threads: Type.Optional(Type.Integer({ minimum: 1, maximum: maxThreads })),
  memoryBudgetBytes: Type.Optional(Type.Integer({ minimum: 1 })),
  maxQueue: Type.Optional(Type.Integer({ minimum: 0, maximum: maxQueueLimit })),
  threadNice: Type.Optional(Type.Integer({ minimum: 0, maximum: 19 })),
  cpu: Type.Optional(Type.Object({
    cgroupRoot: Type.Optional(Type.String({ minLength: 1 })),
    procSelfCgroup: Type.Optional(Type.String({ minLength: 1 })),
  })),
  log: Type.Optional(Type.Object({ warn: Type.Function([Type.Any(), Type.String()], Type.Void()) })),
}))

/** Per-request options: checked on every request, so compiled once. */
const requestFields = {
  deadlineMs: Type.Optional(Type.Number({ minimum: 0 })),
  deadlineAt: Type.Optional(Type.Number({ description: 'performance.now() time' })),
  signal: Type.Optional(abortSignalSchema()),
  client: Type.Optional(Type.String()),
}
const RequestFields = TypeCompiler.Compile(Type.Object(requestFields))
const HashOptionsFields = TypeCompiler.Compile(Type.Object({
  ...requestFields,
  keepIfStarted: Type.Optional(Type.Boolean()),
  ticket: Type.Optional(admissionTicketSchema()),
}))

function frozenPolicy (policy: HashPolicy): HashPolicy {
  return Object.freeze({
    algorithm: policy.algorithm,
    argon2: Object.freeze({ memoryKiB: policy.argon2.memoryKiB, timeCost: policy.argon2.timeCost, parallelism: policy.argon2.parallelism }),
    bcrypt: Object.freeze({ cost: policy.bcrypt.cost }),
    scrypt: Object.freeze({ N: policy.scrypt.N, r: policy.scrypt.r, p: policy.scrypt.p }),
  })
}

/** Throws `CONFIG_INVALID` naming the field at fault. */
function fillEngineOptions (options: unknown): FilledEngineOptions {
  const fault = firstFault(EngineOptions, options, '')
  if (fault !== undefined) {
    const field = fault.field === '' ? 'options' : fault.field
    throw createError('CONFIG_INVALID', `${field} ${fault.message}`, { field })
  }
  const checked = options as PasswordEngineOptions
  validatePolicy(checked.policy)
  const cpuBudget = detectCpuBudget(checked.cpu)
  const threads = Math.min(checked.threads ?? cpuBudget.cpus, maxThreads)
  const budgetBytes = checked.memoryBudgetBytes ?? detectMemoryBudget().hashBytes
  const misfit = poolMemoryMisfit(checked.policy, threads, budgetBytes)
  if (misfit !== undefined) {
    throw createError('CONFIG_INVALID', describeMemoryMisfit(misfit, {
      threads: 'options.threads',
      budget: `the memory budget of ${formatBytes(budgetBytes)} (options.memoryBudgetBytes)`,
      argon2MemoryKiB: 'policy.argon2.memoryKiB',
      scryptN: 'policy.scrypt.N',
      largerBudget: 'a larger options.memoryBudgetBytes',
    }), { field: 'memoryBudgetBytes' })
  }
  return {
    policy: frozenPolicy(checked.policy),
    threads,
    maxQueue: checked.maxQueue ?? threads * defaultQueuePerThread,
    threadNice: checked.threadNice ?? defaultThreadNice,
    cpuBudget,
    memory: { budgetBytes, perThreadBytes: storedMemoryBound(threads, budgetBytes).perThreadBytes },
    log: checked.log,
  }
}

/** Per-request arguments are programming errors when wrong: a TypeError naming the argument. */
function checkFields (check: typeof RequestFields | typeof HashOptionsFields, options: unknown): void {
  if (options === undefined) return
  const fault = firstFault(check, options, 'options')
  if (fault !== undefined) throw new TypeError(`${fault.field} ${fault.message}`)
}

function checkKind (kind: HashTaskKind): void {
  if (kind !== 'hash' && kind !== 'verify') throw new TypeError(`kind must be 'hash' or 'verify', got ${String(kind)}`)
}

function checkRequest (password: unknown, options: HashOptions | undefined): asserts password is string {
  if (typeof password !== 'string') throw new TypeError(`password must be a string, got ${typeof password}`)
  checkFields(HashOptionsFields, options)
  const { ticket, deadlineMs, deadlineAt, client, signal } = options ?? {}
  if (ticket !== undefined && (deadlineMs ?? deadlineAt ?? client ?? signal) !== undefined) {
    throw new TypeError('options.ticket carries its request\'s deadline, client and signal: give the ticket alone')
  }
}

/** The request as admission decides it: the one place a deadline in ms from now becomes an instant (the earlier of both). */
function admissionRequest (kind: HashTaskKind, { deadlineMs, deadlineAt, client, signal }: HashRequest = {}, now: number): AdmissionRequest {
  const fromMs = deadlineMs === undefined ? undefined : now + deadlineMs
  const due = deadlineAt === undefined ? fromMs : fromMs === undefined ? deadlineAt : Math.min(fromMs, deadlineAt)
  return { kind, deadlineAt: due, client: client ?? '', signal }
}

function hashTask (policy: HashPolicy, password: string): HashTask {
  switch (policy.algorithm) {
    case 'argon2id': return { kind: 'hash', algorithm: 'argon2id', params: policy.argon2, password }
    case 'bcrypt': return { kind: 'hash', algorithm: 'bcrypt', params: policy.bcrypt, password }
    case 'scrypt': return { kind: 'hash', algorithm: 'scrypt', params: policy.scrypt, password }
  }
}

class Engine implements PasswordEngine {
  readonly policy: HashPolicy
  readonly strategy: string
  readonly cpuBudget: CpuBudget
  readonly memory: HashPoolMemory
  /** A stored hash above one thread's share of the memory budget is refused before it is queued. */
  private readonly storedMemoryBound: StoredMemoryBound
  private dummyHash = ''
  /** Mean run time of a verify of the current policy: how long a mismatch against an outdated hash is made to take. */
  private policyVerifyMs = 0

  constructor (options: FilledEngineOptions, private readonly executor: HashExecutor) {
    this.policy = options.policy
    this.strategy = executor.strategy
    this.cpuBudget = options.cpuBudget
    this.memory = options.memory
    this.storedMemoryBound = storedMemoryBound(options.threads, options.memory.budgetBytes)
  }

  /** One dummy hash of the policy (seeds the mean run time), then one verify per thread. */
  async warmUp (): Promise<void> {
    // Synchronous randomBytes reads the kernel CSPRNG directly; it never touches libuv's pool.
    const dummyPassword = randomBytes(18).toString('base64url')
    this.dummyHash = String((await this.executor.runInternal(hashTask(this.policy, dummyPassword))).value)
    // Warm each thread (a few at most: the lab's libuv-128 would otherwise warm up 128 threads).
    await Promise.all(Array.from({ length: Math.min(this.executor.threads, 8) }, async () => {
      this.learnPolicyVerify((await this.executor.runInternal({ kind: 'verify', password: dummyPassword, stored: this.dummyHash })).runMs)
    }))
  }

  /** Input refused on the main thread: counted and reported like any failed request. */
  private refuseInput (kind: HashTaskKind, err: unknown): never {
    if (isTollboothError(err)) this.executor.recordRefused({ kind, outcome: 'error', waitMs: 0, runMs: 0 })
    throw err
  }

  /** The ticket a task runs under: the caller's, or one admitted when the task is submitted. */
  private work (kind: HashTaskKind, options: HashOptions | undefined): HashWork {
    const keepIfStarted = options?.keepIfStarted === true
    const now = performance.now()
    if (options?.ticket !== undefined) return { ticket: options.ticket as AdmissionTicket, keepIfStarted, now }
    return { ticket: new AdmissionTicket(admissionRequest(kind, options, now), undefined, () => undefined), keepIfStarted, now }
  }

  async hash (password: string, options?: HashOptions): Promise<string> {
    checkRequest(password, options)
    if (this.policy.algorithm === 'bcrypt' && bcryptPasswordTooLong(password)) {
      this.refuseInput('hash', createError('PASSWORD_TOO_LONG', `bcrypt accepts at most ${bcryptMaxPasswordBytes} UTF-8 bytes; the password was not truncated`))
    }
    return String((await this.executor.run(hashTask(this.policy, password), this.work('hash', options))).value)
  }

  async verify (password: string, storedHash: string, options?: HashOptions): Promise<VerifyResult> {
    checkRequest(password, options)
    let stored: StoredHash
    try {
      stored = inspectStoredHash(storedHash, this.storedMemoryBound)
    } catch (err) {
      this.refuseInput('verify', err)
    }
    const outdated = storedDiffersFromPolicy(stored, this.policy)
    // An outdated hash's mismatch holds its thread as long as a verify of the policy's would.
    const mismatchRunMs = outdated && this.policyVerifyMs > 0 ? { mismatchRunMs: this.policyVerifyMs } : {}
    const { value, runMs } = await this.executor.run({ kind: 'verify', password, stored: storedHash, ...mismatchRunMs }, this.work('verify', options))
    const match = value === true
    if (!outdated) this.learnPolicyVerify(runMs)
    else if (!match) await this.padToPolicyVerify(runMs)
    return { match, needsRehash: outdated }
  }

  async verifyDummy (password: string, options?: HashOptions): Promise<void> {
    checkRequest(password, options)
    this.learnPolicyVerify((await this.executor.run({ kind: 'verify', password, stored: this.dummyHash }, this.work('verify', options))).runMs)
  }

  private learnPolicyVerify (runMs: number): void {
    this.policyVerifyMs = nextMeanRunMs(this.policyVerifyMs, runMs)
  }

  /**
   * A mismatch against a cheaper, outdated hash answers no sooner than a dummy verify would, so
   * its timing does not tell the account exists. Our workers already hold it (`mismatchRunMs`);
   * this timer covers executors that do not (the lab's). It ignores the request's signal: a client
   * that leaves must not skip the failure's count. A dearer hash cannot be made cheaper.
   */
  private async padToPolicyVerify (runMs: number): Promise<void> {
    const padMs = Math.min(maxPadMs, this.policyVerifyMs - runMs)
    // The global setTimeout (not timers/promises): tests may mock it.
    if (padMs >= 1) await new Promise((resolve) => { setTimeout(resolve, padMs) })
  }

  admit (kind: HashTaskKind, request?: HashRequest): HashTicket | TollboothError {
    checkKind(kind)
    checkFields(RequestFields, request)
    const now = performance.now()
    return this.executor.admit(admissionRequest(kind, request, now), now)
  }

  refuse (kind: HashTaskKind, refusal: TollboothError): never {
    if (refusal.code !== 'HASH_POOL_CLOSED') this.executor.recordRefused({ kind, outcome: refusalOutcome(refusal), waitMs: 0, runMs: 0 })
    throw refusal
  }

  stats (): HashPoolStats {
    return this.executor.stats()
  }

  onTask (listener: (event: HashTaskEvent) => void): () => void {
    return this.executor.onTask(listener)
  }

  async ping (timeoutMs: number = defaultPingTimeoutMs): Promise<void> {
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new TypeError(`timeoutMs must be a finite number > 0, got ${String(timeoutMs)}`)
    }
    await this.executor.ping(timeoutMs)
  }

  close (): Promise<void> {
    return this.executor.close()
  }
}

/** tollbooth's own executor: the CPU-budgeted pool with admission, deadlines and cancellation. */
const tollboothPool: ExecutorFactory = (settings) => new TollboothPool(settings)

/** Validates the options (`CONFIG_INVALID`), starts the executor, computes the dummy hash for `verifyDummy` and warms the threads. */
export async function createPasswordEngine (options: PasswordEngineOptions, createExecutor: ExecutorFactory = tollboothPool): Promise<PasswordEngine> {
  const filled = fillEngineOptions(options)
  const settings: ExecutorSettings = { threads: filled.threads, maxQueue: filled.maxQueue, threadNice: filled.threadNice, log: filled.log }
  const executor = createExecutor(settings)
  const engine = new Engine(filled, executor)
  try {
    await engine.warmUp()
  } catch (err) {
    await executor.close()
    throw err
  }
  return engine
}
