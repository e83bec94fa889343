/**
 * The main thread's side of load generation: starts the generator threads, hands each segment
 * (a phase, a knee step) to all of them at one start time, and merges their partials into the
 * run's seconds and the segment's totals.
 */
import { Worker } from 'node:worker_threads'
import type { GeneratorCommand, GeneratorMessage, GeneratorOptions } from './generator.js'
import type { EndpointStats, LatencySummary, SecondSample, SegmentLoad } from '../result.js'
import { nowEpochMs } from '../time.js'
import { totalDurationMs } from './schedule.js'
import { EndpointMap, summarise, Tally, type Counts, type TallyPartial } from './stats.js'

const workerUrl = new URL('./generator.js', import.meta.url)
/** Workers get this long to receive a segment before it starts. */
const segmentLeadMs = 100

/** `connections`: in all, split over the workers. */
export interface LoadSessionOptions extends Omit<GeneratorOptions, 'shard' | 'shards' | 'runStartEpochMs'> {
  workers: number
  /** Endpoint names in report order. */
  endpointOrder: readonly string[]
  /** Called once per merged second, in order. */
  onSecond?: (sample: SecondSample) => void
}

export interface SegmentResult extends Omit<Counts, 'inFlight' | 'vus'> {
  phase: string | undefined
  /** Seconds of the run (`t`) the segment's schedule covered: (startT, endT]. */
  startT: number
  endT: number
  /** The schedule's length (ms), its drain not included. */
  durationMs: number
  /** Every request the segment sent, whenever it ended. */
  all: EndpointStats
  sendLag: LatencySummary | null
  firstIterationError: string | null
}

interface Shard { worker: Worker, eluSum: number, eluSeconds: number }

/** Partials of one second or segment until every shard has sent its own. */
/** `utilisation`: of a second, the busiest generator thread's event-loop utilisation in it (0..1). */
interface Pending { tally: Tally, received: number, utilisation?: number, resolve?: (tally: Tally) => void, reject?: (err: Error) => void }

export class LoadSession {
  readonly seconds: SecondSample[] = []
  /** Every request of the run by endpoint (merged from the seconds). */
  readonly totals = new EndpointMap()
  /** Second 1 starts when the first segment can (workers need a moment to load). */
  readonly runStartEpochMs = Math.ceil(nowEpochMs() + 500)
  private readonly shards: Shard[] = []
  private readonly pendingSeconds = new Map<number, Pending>()
  private nextSecond = 1
  private readonly segments = new Map<number, Pending>()
  private readonly phaseByT: Array<{ fromT: number, phase: string | undefined }> = []
  private failure: Error | undefined
  private closing = false

  private constructor (private readonly options: LoadSessionOptions) {}

  static async start (options: LoadSessionOptions): Promise<LoadSession> {
    const session = new LoadSession(options)
    try {
      await Promise.all(Array.from({ length: options.workers }, async (_, shard) => { await session.startWorker(shard) }))
    } catch (err) {
      await session.close(true)
      throw err
    }
    return session
  }

  private async startWorker (index: number): Promise<void> {
    const { workers, connections, endpointOrder, onSecond, ...common } = this.options
    const generator: GeneratorOptions = {
      ...common, shard: index, shards: workers, connections: Math.max(1, Math.ceil(connections / workers)), runStartEpochMs: this.runStartEpochMs,
    }
    const shard: Shard = { worker: new Worker(workerUrl, { workerData: { generator } }), eluSum: 0, eluSeconds: 0 }
    this.shards.push(shard)
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error): void => {
        reject(err)
        this.fail(err)
      }
      shard.worker.on('message', (message: GeneratorMessage) => {
        if (message.type === 'ready') resolve()
        else if (message.type === 'failed') fail(new Error(`load generator ${index} failed: ${message.message}`))
        else if (message.type === 'second') {
          shard.eluSum += message.eventLoopUtilisation
          shard.eluSeconds++
          const pending = this.merge(this.pendingSeconds, message.t, message.tally)
          pending.utilisation = Math.max(pending.utilisation ?? 0, message.eventLoopUtilisation)
          this.completeSeconds()
        } else if (message.type === 'segment-done') {
          const pending = this.merge(this.segments, message.id, message.tally)
          if (pending.received === this.shards.length) pending.resolve?.(pending.tally)
        }
      })
      shard.worker.once('error', fail)
      shard.worker.once('exit', (code) => { if (!this.closing) fail(new Error(`load generator ${index} exited with code ${code}`)) })
    })
  }

  private fail (err: Error): void {
    this.failure ??= err
    for (const pending of this.segments.values()) pending.reject?.(err)
  }

  private merge (into: Map<number, Pending>, key: number, partial: TallyPartial): Pending {
    let pending = into.get(key)
    if (pending === undefined) into.set(key, pending = { tally: new Tally(), received: 0 })
    pending.tally.add(partial)
    pending.received++
    return pending
  }

  /** Seconds complete in order: every shard sends every second. */
  private completeSeconds (): void {
    for (let next = this.pendingSeconds.get(this.nextSecond); next !== undefined && next.received >= this.shards.length; next = this.pendingSeconds.get(this.nextSecond)) {
      const t = this.nextSecond++
      this.pendingSeconds.delete(t)
      const generatorUtilisation = Math.round((next.utilisation ?? 0) * 1000) / 1000
      const { counts, endpoints } = next.tally
      const phase = this.phaseByT.findLast((entry) => entry.fromT <= t)?.phase
      const sample: SecondSample = {
        t,
        ...(phase === undefined ? {} : { phase }),
        offered: counts.offered,
        started: counts.started,
        achieved: counts.achieved,
        dropped: counts.dropped,
        inFlight: counts.inFlight,
        vus: counts.vus,
        all: endpoints.all().toStats(),
        byEndpoint: endpoints.toStats(this.options.endpointOrder),
        healthz: null,
        healthzFloor: null,
        generatorUtilisation,
      }
      this.totals.addPartials(Object.fromEntries(endpoints.byName))
      this.seconds.push(sample)
      this.options.onSecond?.(sample)
    }
  }

  /** Runs one segment on every shard from the next whole second; resolves when all its requests have ended. */
  async runSegment (phase: string | undefined, load: SegmentLoad): Promise<SegmentResult> {
    if (this.failure !== undefined) throw this.failure
    const id = this.segments.size + 1
    const startT = Math.max(0, Math.ceil((nowEpochMs() + segmentLeadMs - this.runStartEpochMs) / 1000))
    const startEpochMs = this.runStartEpochMs + startT * 1000
    this.phaseByT.push({ fromT: startT + 1, phase })
    const pending: Pending = { tally: new Tally(), received: 0 }
    this.segments.set(id, pending)
    const { counts, endpoints, sendLag, firstIterationError } = await new Promise<Tally>((resolve, reject) => {
      Object.assign(pending, { resolve, reject })
      const command: GeneratorCommand = { type: 'segment', segment: { id, phase, load, startEpochMs } }
      for (const shard of this.shards) shard.worker.postMessage(command)
    })
    const { inFlight, vus, ...iterations } = counts
    const durationMs = totalDurationMs(load.stages)
    return {
      ...iterations,
      phase,
      startT,
      endT: startT + Math.ceil(durationMs / 1000),
      durationMs,
      all: endpoints.all().toStats(),
      sendLag: sendLag === undefined ? null : summarise(sendLag),
      firstIterationError,
    }
  }

  /** Highest mean event-loop utilisation of any generator thread over the run (0..1). */
  maxEventLoopUtilisation (): number {
    return Math.max(0, ...this.shards.map((shard) => (shard.eluSeconds === 0 ? 0 : shard.eluSum / shard.eluSeconds)))
  }

  get workerCount (): number {
    return this.shards.length
  }

  /** Stops the generators (at once with `abort`) and waits for their last seconds. */
  async close (abort = false): Promise<void> {
    if (this.closing) return
    this.closing = true
    await Promise.all(this.shards.map(async ({ worker }) => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { void worker.terminate().then(() => { resolve() }) }, abort ? 2000 : 60_000)
        const done = (): void => {
          clearTimeout(timer)
          resolve()
        }
        worker.on('message', (message: GeneratorMessage) => { if (message.type === 'closed') done() })
        worker.once('exit', done)
        worker.postMessage({ type: 'close', abort } satisfies GeneratorCommand)
      })
      await worker.terminate()
    }))
    this.pendingSeconds.clear()
  }
}
