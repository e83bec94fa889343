import type pg from 'pg'

export interface StatementWatch {
  /** Pooled clients handed out since the watch started (each `pool.query` takes one, each transaction one). */
  readonly checkouts: number
  /** The SQL text of every statement sent on them, BEGIN and COMMIT included: one round trip each. */
  readonly texts: string[]
  stop (): void
}

function textOf (config: unknown): string {
  if (typeof config === 'string') return config
  return String((config as { text?: unknown } | undefined)?.text)
}

/**
 * Counts what the pool's clients send PostgreSQL, on every path (`pool.query` and transactions'
 * clients alike): a client's `query` is watched from its checkout (the pool's 'acquire' event)
 * to its release. The app shares the test database's pool, so a request's statements show here.
 */
export function watchStatements (pool: pg.Pool): StatementWatch {
  const texts: string[] = []
  let checkouts = 0
  const originals = new Map<pg.PoolClient, pg.PoolClient['query']>()
  const restore = (client: pg.PoolClient): void => {
    const original = originals.get(client)
    if (original === undefined) return
    client.query = original
    originals.delete(client)
  }
  const onAcquire = (client: pg.PoolClient): void => {
    checkouts += 1
    const original = client.query
    originals.set(client, original)
    client.query = function (this: pg.PoolClient, ...args: unknown[]): unknown {
      texts.push(textOf(args[0]))
      return (original as (...a: unknown[]) => unknown).apply(this, args)
    } as unknown as pg.PoolClient['query']
  }
  const onRelease = (_err: Error | undefined, client: pg.PoolClient): void => { restore(client) }
  pool.on('acquire', onAcquire)
  pool.on('release', onRelease)
  return {
    get checkouts () { return checkouts },
    texts,
    stop () {
      pool.removeListener('acquire', onAcquire)
      pool.removeListener('release', onRelease)
      for (const client of [...originals.keys()]) restore(client)
    },
  }
}
