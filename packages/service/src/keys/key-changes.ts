/**
 * The signing keys' change notifications: one connection of the replica's own LISTENs on the
 * table's channel, so a key created or retired by any replica or by `tollbooth keys` is reloaded
 * as its transaction commits. Not a pooled connection: a LISTEN holds its connection for the
 * process's life. Lost (the database restarted, the network went silent), it is made again with
 * backoff, and the keys are reloaded once it listens again, since what was sent meanwhile is gone.
 * Nothing here throws into the process: faults are logged and the periodic reload still runs.
 */
import pg from 'pg'
import { listenForSigningKeyChanges, signingKeysChannel } from '../db/index.js'

/** Where the listener says it lost or found its connection (the key ring's log). */
interface ChangeLog {
  info (fields: object, message: string): void
  warn (fields: object, message: string): void
}

export interface KeyChangeOptions {
  /** The pool whose connection settings the listening connection takes. */
  db: pg.Pool
  /** Runs on each notification, and after each reconnection. */
  onChange: () => void
  log: ChangeLog
  /** How often the idle connection is asked a `SELECT 1`: a connection gone silent is found within this plus `heartbeatTimeoutMs`. */
  heartbeatIntervalMs: number
  heartbeatTimeoutMs?: number
  /** First reconnection delay, doubled per failure up to `maxBackoffMs`, each with jitter. */
  initialBackoffMs?: number
  maxBackoffMs?: number
}

/** A heartbeat answers in a millisecond; one that has not in 5 s is on a connection that is gone. */
const defaultHeartbeatTimeoutMs = 5000
const defaultInitialBackoffMs = 200
/** Replicas that lost the database together come back spread over up to this long. */
const defaultMaxBackoffMs = 15_000
/** A connection attempt to a host that does not answer is given up after this long (pg waits forever by default). */
const connectTimeoutMs = 5000
/** How long a close waits for the server's goodbye before it drops the socket. */
const closeTimeoutMs = 2000

export class KeyChangeListener {
  private client: pg.Client | undefined
  private closed = false
  private failures = 0
  private retryTimer: NodeJS.Timeout | undefined
  private readonly heartbeatTimer: NodeJS.Timeout
  private heartbeat: Promise<void> | undefined
  /** The connection attempt under way, which a close waits for (it ends its own client once closed). */
  private attempt: Promise<void> | undefined

  private constructor (private readonly options: KeyChangeOptions) {
    this.heartbeatTimer = setInterval(() => { this.beat() }, options.heartbeatIntervalMs)
    this.heartbeatTimer.unref()
  }

  /**
   * Starts listening. Resolves once the first attempt has listened or failed (it is then retried in
   * the background): a caller that loads the keys after this misses no change made while it loads.
   */
  static async start (options: KeyChangeOptions): Promise<KeyChangeListener> {
    const listener = new KeyChangeListener(options)
    await listener.connect(false)
    return listener
  }

  /** Stops listening and closes the connection; waits for the server's goodbye at most `closeTimeoutMs`. */
  async close (): Promise<void> {
    this.closed = true
    clearInterval(this.heartbeatTimer)
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
    const client = this.client
    this.client = undefined
    await Promise.all([client === undefined ? undefined : endClient(client), this.attempt])
  }

  private async connect (reloadAfter: boolean): Promise<void> {
    this.retryTimer = undefined
    if (this.closed) return
    this.attempt = this.listen(reloadAfter).finally(() => { this.attempt = undefined })
    await this.attempt
  }

  private async listen (reloadAfter: boolean): Promise<void> {
    const client = new pg.Client({ ...connectionSettings(this.options.db), application_name: 'tollbooth key changes', connectionTimeoutMillis: connectTimeoutMs })
    // Registered for the client's whole life: an 'error' with no listener would end the process.
    client.on('error', (err) => { this.lost(client, err) })
    client.on('end', () => { this.lost(client, undefined) })
    client.on('notification', (message) => {
      if (message.channel === signingKeysChannel && !this.closed) this.options.onChange()
    })
    try {
      await client.connect()
      await listenForSigningKeyChanges(client)
    } catch (err) {
      void endClient(client)
      this.failed(err)
      return
    }
    if (this.closed) {
      await endClient(client)
      return
    }
    this.client = client
    if (this.failures > 0) this.options.log.info({ attempts: this.failures }, 'access tokens: listening for key changes again; reloading the keys')
    this.failures = 0
    if (reloadAfter) this.options.onChange()
  }

  private failed (err: unknown, what = 'cannot listen for key changes'): void {
    if (this.closed) return
    if (this.failures === 0) this.options.log.warn({ err }, `access tokens: ${what}; reconnecting with backoff (the periodic reload still runs)`)
    this.failures += 1
    const initialMs = this.options.initialBackoffMs ?? defaultInitialBackoffMs
    const ceilingMs = Math.min(this.options.maxBackoffMs ?? defaultMaxBackoffMs, initialMs * 2 ** Math.min(this.failures - 1, 20))
    const delayMs = ceilingMs / 2 + Math.random() * ceilingMs / 2
    this.retryTimer = setTimeout(() => { void this.connect(true) }, delayMs)
    this.retryTimer.unref()
  }

  /** The listening connection failed or ended: once per connection, drop it and connect again. */
  private lost (client: pg.Client, err: unknown): void {
    if (this.client !== client) return
    this.client = undefined
    void endClient(client)
    this.failed(err, 'lost the connection that listens for key changes')
  }

  /** Asks the listening connection a `SELECT 1`; one that does not answer in time is dropped, and made again. */
  private beat (): void {
    const client = this.client
    if (client === undefined || this.heartbeat !== undefined) return
    const timeoutMs = this.options.heartbeatTimeoutMs ?? defaultHeartbeatTimeoutMs
    // query_timeout is pg's client-side deadline per query (missing from its type definitions).
    this.heartbeat = client.query({ text: 'SELECT 1', query_timeout: timeoutMs } as pg.QueryConfig).then(() => {}, (err: unknown) => {
      this.lost(client, err)
    }).finally(() => { this.heartbeat = undefined })
  }
}

/** The pool's connection settings, for a connection of its own. */
function connectionSettings (db: pg.Pool): pg.ClientConfig {
  const { connectionString, host, port, user, password, database, ssl } = db.options
  return { connectionString, host, port, user, password, database, ssl }
}

/** Ends a client, dropping its socket when the server does not say goodbye in time; never rejects. */
async function endClient (client: pg.Client): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      client.connection.stream.destroy()
      resolve()
    }, closeTimeoutMs)
  })
  await Promise.race([client.end().catch(() => {}), timedOut])
  clearTimeout(timer)
}
