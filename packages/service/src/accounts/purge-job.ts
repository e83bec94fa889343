/**
 * Deletes dead rows (db/purge.ts) every interval: batch after batch per target until one
 * comes back short. close() stops it between batches and waits for the batch in flight, so a
 * shutdown never cuts a statement off nor waits for a whole run.
 */
import type { FastifyBaseLogger } from 'fastify'
import { type Queryable, purgeBatch, type PurgeTarget } from '../db/index.js'

export interface PurgeJobOptions {
  db: Queryable
  targets: readonly PurgeTarget[]
  intervalMs: number
  batchSize: number
  log: FastifyBaseLogger
}

/** Rows deleted by one run, by target name. */
export type PurgeCounts = Record<string, number>

export class PurgeJob {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<PurgeCounts> | undefined
  private closed = false

  constructor (private readonly options: PurgeJobOptions) {}

  /** Runs every interval from now (the first run one interval after the start). */
  start (): void {
    if (this.closed || this.timer !== undefined) return
    // The global setTimeout (not timers/promises): tests move it with node:test's mock timers.
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.runOnce().finally(() => { this.start() })
    }, this.options.intervalMs)
    this.timer.unref()
  }

  /** One run now (or the one already running); never throws: a failure is logged and the next run tries again. */
  async runOnce (): Promise<PurgeCounts> {
    this.running ??= this.run().finally(() => { this.running = undefined })
    return await this.running
  }

  private async run (): Promise<PurgeCounts> {
    const counts: PurgeCounts = {}
    const startedMs = performance.now()
    try {
      for (const target of this.options.targets) {
        if (this.closed) break
        counts[target.name] = 0
        while (!this.closed) {
          const deleted = await purgeBatch(this.options.db, target, this.options.batchSize)
          counts[target.name] = (counts[target.name] ?? 0) + deleted
          if (deleted < this.options.batchSize) break
        }
      }
    } catch (err) {
      this.options.log.warn({ err, deleted: counts }, 'purge run failed; the next run tries again')
      return counts
    }
    if (Object.values(counts).some((n) => n > 0)) {
      this.options.log.info({ deleted: counts, durationMs: Math.round(performance.now() - startedMs) }, 'purged dead rows')
    }
    return counts
  }

  /** Stops the schedule, and a run in flight after its current batch; resolves when it has. */
  async close (): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    this.timer = undefined
    await this.running
  }
}
