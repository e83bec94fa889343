/**
 * The database pool's default size. A PostgreSQL on this machine (the embedded one, or a URL on
 * loopback or a Unix socket) runs on the same cores as the event loop: every connection past
 * about two per core adds a backend that competes with the loop for the CPU, and its queries only
 * wait longer inside PostgreSQL instead of in the pool. Two per core is PostgreSQL's own rule of
 * thumb for the connections that keep its cores busy. A database elsewhere has cores of its own,
 * which this process cannot see: the fixed default then.
 */
import net from 'node:net'

/** Connections per core of the CPU budget when the database shares this machine. */
const localConnectionsPerCpu = 2
/** The pool's default size for a database on another machine. */
const remoteDatabasePoolSize = 10

/** 127.0.0.0/8, ::1 (also as ::ffff:127.x) or the name localhost: reachable from this machine alone. */
export function isLoopbackHost (host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  if (bare === 'localhost') return true
  if (net.isIPv4(bare)) return bare.startsWith('127.')
  if (net.isIPv6(bare)) {
    if (bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare)?.[1]
    return mapped !== undefined && mapped.startsWith('127.')
  }
  return false
}

/**
 * Whether the database runs on this machine: none given (the embedded one), a loopback host, or a
 * Unix socket (an empty host, or a `host` parameter that is a path, as libpq and pg read it).
 */
export function databaseOnThisMachine (databaseUrl: string | undefined): boolean {
  if (databaseUrl === undefined) return true
  const url = new URL(databaseUrl)
  const host = url.searchParams.get('host') ?? decodeURIComponent(url.hostname)
  if (host === '' || host.startsWith('/')) return true
  return isLoopbackHost(host)
}

/**
 * Connections in one process's pool: two per CPU of its share of the budget (`cpus` split between
 * `processes`, as the hash threads are), at least two, when the database shares the machine;
 * otherwise the fixed default.
 */
export function defaultDatabasePoolSize (databaseUrl: string | undefined, cpus: number, processes: number): number {
  if (!databaseOnThisMachine(databaseUrl)) return remoteDatabasePoolSize
  return Math.max(localConnectionsPerCpu, localConnectionsPerCpu * Math.floor(Math.max(1, cpus) / Math.max(1, processes)))
}
