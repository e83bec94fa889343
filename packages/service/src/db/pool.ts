import { performance } from 'node:perf_hooks'
import pg from 'pg'
import { databaseUnavailable, isConnectionFailure, poolSaturated } from './errors.js'
import { processWarningLog, ThrottledFaultLog, type WarnLog } from './fault-log.js'
import { PreparingClient } from './prepared-client.js'

export type Queryable = pg.Pool | pg.PoolClient

// bigint ids (posts) come back as strings by default; they fit in a JS number for centuries.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number.parseInt(value, 10))

/**
 * The longest a request waits for a pooled connection, connecting included (the default of
 * TOLLBOOTH_DB_ACQUIRE_TIMEOUT_MS): a second means the pool is far behind or the database is not
 * answering, and it leaves a login most of its deadline.
 */
export const defaultAcquireTimeoutMs = 1000

/** A ROLLBACK answers in microseconds; one that has not in 5 s is on a connection that is gone. */
const defaultRollbackTimeoutMs = 5000

/** A goodbye (Terminate, then the server closes) takes a millisecond; end() waits for it this long at most. */
const defaultCloseTimeoutMs = 2000

/** pg-pool's message when a waiter for a pooled client reaches connectionTimeoutMillis. */
const queueTimeoutMessage = 'timeout exceeded when trying to connect'

export interface DatabasePoolOptions {
  /** See `defaultAcquireTimeoutMs`. */
  acquireTimeoutMs?: number
  /** See `defaultRollbackTimeoutMs`. */
  rollbackTimeoutMs?: number
  /** See `defaultCloseTimeoutMs`. */
  closeTimeoutMs?: number
  /** Where database faults are logged, at warn, throttled; default: process warnings. */
  log?: WarnLog
  /** At most one fault line of each kind per this interval. */
  faultLogIntervalMs?: number
  /** Queries with parameters go as named prepared statements (prepared-client.ts); default true. */
  preparedStatements?: boolean
}

type ConnectCallback = (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void

function faultFields (err: unknown): Record<string, unknown> {
  const { code, message } = (err ?? {}) as { code?: unknown, message?: unknown }
  return { code, reason: message }
}

/**
 * pg's Pool with a deadline on getting a connection, and coded answers when it cannot: `connect()`
 * tells waiting behind busy clients from failing to connect, which pg times out alike. Connection
 * faults are logged (throttled), never swallowed.
 */
export class DatabasePool extends pg.Pool {
  readonly acquireTimeoutMs: number
  readonly rollbackTimeoutMs: number
  private readonly closeTimeoutMs: number
  private readonly faults: ThrottledFaultLog
  /** Clients handed out and not yet released: the pool's 'acquire' and 'release' events, which fire as the state changes. */
  private checkedOut = 0
  private lastConnectedAt = Number.NEGATIVE_INFINITY
  private lastFailedAt = Number.NEGATIVE_INFINITY
  private readonly reported = new WeakSet<object>()
  /** Clients connected and not yet closed: 'connect' counts one up, 'remove' (its socket has ended) down. */
  private open = 0
  private readonly closedWaiters: Array<() => void> = []

  constructor (url: string, size: number, options: DatabasePoolOptions = {}) {
    const acquireTimeoutMs = options.acquireTimeoutMs ?? defaultAcquireTimeoutMs
    super({
      connectionString: url,
      max: size,
      connectionTimeoutMillis: acquireTimeoutMs,
      idleTimeoutMillis: 30_000,
      application_name: 'tollbooth',
      Client: options.preparedStatements === false ? pg.Client : PreparingClient,
    })
    this.acquireTimeoutMs = acquireTimeoutMs
    this.rollbackTimeoutMs = options.rollbackTimeoutMs ?? defaultRollbackTimeoutMs
    this.closeTimeoutMs = options.closeTimeoutMs ?? defaultCloseTimeoutMs
    this.faults = new ThrottledFaultLog(options.log ?? processWarningLog, options.faultLogIntervalMs)

    this.on('connect', () => {
      this.open += 1
      this.lastConnectedAt = performance.now()
    })
    this.on('remove', () => {
      this.open -= 1
      if (this.open === 0) for (const resolve of this.closedWaiters.splice(0)) resolve()
    })
    // An idle client lost its connection: pg has already removed it; the next query reconnects.
    this.on('error', (err) => { this.connectionLost(err) })
    // A checked-out client whose socket dies emits 'error' too, and with no listener that would
    // throw from the socket's handler and end the process: listen while it is out.
    this.on('acquire', (client) => {
      this.checkedOut += 1
      client.on('error', this.onCheckedOutError)
    })
    this.on('release', (err, client) => {
      this.checkedOut -= 1
      client.removeListener('error', this.onCheckedOutError)
      if (isConnectionFailure(err)) this.connectionLost(err)
    })
  }

  private readonly onCheckedOutError = (err: Error): void => { this.connectionLost(err) }

  /**
   * Resolves once every client's connection has closed. pg-pool's end() resolves as soon as it
   * has asked its clients to end, so a database stopped right after (the embedded one) would send
   * 57P01 to a client already out of the pool, an uncaught exception. Past `closeTimeoutMs` it
   * resolves all the same, so a silent server does not hold a shutdown.
   */
  override end (): Promise<void>
  override end (callback: () => void): void
  override end (callback?: () => void): Promise<void> | undefined {
    const closed = super.end().then(async () => {
      if (this.open === 0) return
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.closeTimeoutMs)
        this.closedWaiters.push(() => { clearTimeout(timer); resolve() })
      })
    })
    if (callback === undefined) return closed
    closed.then(callback, callback)
    return undefined
  }

  /** A client withTransaction gave up on for a reason pg does not call a connection failure (a ROLLBACK that did not answer). */
  connectionGivenUp (err: unknown): void {
    this.lastFailedAt = performance.now()
    this.faults.report('database connection given up', faultFields(err))
  }

  private connectionLost (err: unknown): void {
    if (!isConnectionFailure(err)) {
      // Not a connection fault (pg says so rarely); still never silent.
      this.faults.report('database client error', faultFields(err))
      return
    }
    this.lastFailedAt = performance.now()
    // The same error arrives as the client's 'error' and with its release: count it once.
    if (typeof err === 'object' && err !== null) {
      if (this.reported.has(err)) return
      this.reported.add(err)
    }
    this.faults.report('database connection lost', faultFields(err))
  }

  override connect (): Promise<pg.PoolClient>
  override connect (callback: ConnectCallback): void
  override connect (callback?: ConnectCallback): Promise<pg.PoolClient> | undefined {
    if (callback === undefined) {
      return new Promise((resolve, reject) => {
        this.connect((err, client) => {
          if (client === undefined) reject(err ?? new Error('no client'))
          else resolve(client)
        })
      })
    }
    super.connect((err, client, done) => {
      if (err === undefined || err === null) callback(undefined, client, done)
      else callback(this.acquireFailure(err), undefined, done)
    })
    return undefined
  }

  private acquireFailure (err: Error): Error {
    if (err.message === queueTimeoutMessage) {
      if (this.waitedOnBusyClients()) {
        this.faults.report('database pool saturated', { size: this.options.max, checkedOut: this.checkedOut, waiting: this.waitingCount, acquireTimeoutMs: this.acquireTimeoutMs })
        return poolSaturated(err)
      }
      this.faults.report('database connection failed', faultFields(err))
      return databaseUnavailable(err)
    }
    if (isConnectionFailure(err)) {
      this.lastFailedAt = performance.now()
      this.faults.report('database connection failed', faultFields(err))
    }
    // Mapped where it is answered (http/error-handler.ts), like the same failures from a query.
    return err
  }

  /**
   * A waiter timed out: saturation, or a database that does not answer? A failure more recent than
   * any success means unavailable; every slot checked out means saturated; otherwise saturated
   * only if a connection succeeded within the acquire deadline.
   */
  private waitedOnBusyClients (): boolean {
    if (this.lastFailedAt > this.lastConnectedAt) return false
    if (this.checkedOut >= (this.options.max ?? 10)) return true
    return performance.now() - this.lastConnectedAt < this.acquireTimeoutMs
  }
}

export function createDatabasePool (url: string, size: number, options: DatabasePoolOptions = {}): DatabasePool {
  return new DatabasePool(url, size, options)
}

/** 26000 (a prepared statement does not exist) and 0A000 (a cached plan's result type changed). */
function isStatementGone (err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === '26000' || code === '0A000'
}

/** Runs `work` in one transaction; a client whose ROLLBACK fails is destroyed, never returned mid-transaction. */
export async function withTransaction<T> (pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (err) {
    const rollbackTimeoutMs = pool instanceof DatabasePool ? pool.rollbackTimeoutMs : defaultRollbackTimeoutMs
    try {
      // query_timeout is pg's per-query client-side deadline (missing from its type definitions).
      await client.query({ text: 'ROLLBACK', query_timeout: rollbackTimeoutMs } as pg.QueryConfig)
    } catch (rollbackError) {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError))
      // A connection failure is logged by the pool as the client is released; a silent one is not.
      if (pool instanceof DatabasePool && !isConnectionFailure(broken)) pool.connectionGivenUp(broken)
    }
    // A statement the connection can no longer run (prepared-client.ts): not kept for the next transaction.
    if (broken === undefined && isStatementGone(err)) broken = err as Error
    throw err
  } finally {
    client.release(broken)
  }
}
