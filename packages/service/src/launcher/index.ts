/**
 * `tollbooth/launcher`: the small, public API through which tools outside the
 * service (the load lab, the test runner) start tollbooth the way a user does,
 * without importing its internals. Documented in docs/reference/launcher.md.
 *
 * - `startDatabase()`: a throwaway embedded PostgreSQL (a scratch folder, removed on stop).
 * - `startServe()`: `tollbooth serve` as its own process; its URL comes from the ready
 *   file the service writes once it listens (`--ready-file`), never from log text. With
 *   `harness`, the lab's research harness instead (harness/serve.ts).
 * - `machineFacts()`: what the service would see of this machine (its CPU budget), whether the
 *   scheduler groups processes by session, the caller's open-files limit, and its version.
 * - `settingDefaults()`: each setting's default, by its environment variable.
 * - `startReplicas()`: N services on one PostgreSQL, each under a CPU quota, behind HAProxy.
 * - `openDatabaseMeter()`: what PostgreSQL has done so far (WAL, statements), to divide by a load's work.
 */
import fs from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import { settings } from '../config/index.js'
import { scratchClusterDir, startEmbeddedPostgres } from '../db/index.js'
import { detectCpuBudget, ownOpenFilesLimit, schedulerAutogroups } from '../machine/index.js'
import { packageVersion } from '../paths.js'

/** The service package's version. */
export const serviceVersion: string = packageVersion

export interface MachineFacts {
  /** The CPU the service sizes its hash pool to: cgroup quota, affinity, cores (the smallest). */
  cpuBudget: { cpus: number, quota: number | null, source: string }
  /** Scheduler autogroups on (nice values count only inside a session), off, or unknown (null): machine/scheduler.ts. */
  schedulerAutogroups: boolean | null
  /** This process's soft open-files limit (Infinity: unlimited; null: unknown): the sockets a load generator may hold. */
  openFiles: number | null
  serviceVersion: string
}

export function machineFacts (): MachineFacts {
  const budget = detectCpuBudget()
  return { cpuBudget: { cpus: budget.cpus, quota: budget.quota ?? null, source: budget.source }, schedulerAutogroups: schedulerAutogroups(), openFiles: ownOpenFilesLimit() ?? null, serviceVersion }
}

/** Each setting's default by its environment variable (`TOLLBOOTH_LOGIN_DEADLINE_MS` -> `2000`): what a service started without it runs with. */
export function settingDefaults (): Readonly<Record<string, string>> {
  return Object.fromEntries(settings.flatMap((setting) => setting.defaultValue === undefined ? [] : [[setting.env, setting.defaultValue]]))
}

export interface LaunchedDatabase {
  /** A postgres:// URL on 127.0.0.1, as superuser, to the database named in the options. */
  url: string
  /** Stops PostgreSQL and deletes its folder. */
  stop (): Promise<void>
}

/**
 * An embedded PostgreSQL 15 in a scratch folder under the system's temp folder, deleted on stop.
 * `statementStatistics`: with pg_stat_statements loaded and created in the database, so that a
 * database meter counts the statements run (it costs PostgreSQL a little CPU per statement).
 */
export async function startDatabase (options: { name?: string, label?: string, nonDurable?: boolean, statementStatistics?: boolean } = {}): Promise<LaunchedDatabase> {
  const clusterDir = scratchClusterDir(options.label ?? 'launcher')
  const settings: Record<string, string> = options.statementStatistics === true ? { shared_preload_libraries: 'pg_stat_statements' } : {}
  const database = await startEmbeddedPostgres({ clusterDir, databaseName: options.name ?? 'tollbooth', nonDurable: options.nonDurable, settings })
  if (options.statementStatistics === true) {
    const client = new pg.Client({ connectionString: database.url })
    try {
      await client.connect()
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    } catch (err) {
      await database.stop()
      throw err
    } finally {
      await client.end().catch(() => {})
    }
  }
  return {
    url: database.url,
    async stop () {
      await database.stop()
      fs.rmSync(path.dirname(clusterDir), { recursive: true, force: true })
    },
  }
}
export type { ReadyInfo } from '../cli/index.js'
export { startServe, tollboothBin, type HarnessOptions, type ServeProcess, type StartServeOptions } from './serve.js'
export { startReplicas, type Replica, type ReplicaSet, type StartReplicasOptions } from './replicas.js'
export { haproxyBinary, recommendedHaproxyLimits, type HaproxyLimits, type HaproxyServerStats } from './haproxy.js'
export { openDatabaseMeter, type DatabaseActivity, type DatabaseMeter } from './database-activity.js'
