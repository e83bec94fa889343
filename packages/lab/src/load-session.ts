/**
 * The main thread's side of load generation: starts the generator threads,
 * hands each segment (a phase, a knee step) to all of them at one start time,
 * and merges their per-second and per-segment partials into the run's seconds
 * and the segment's totals.
 */
import { Worker } from 'node:worker_threads'
import { addEncoded, createHistogram, summarise } from './histogram.js'
import { nowEpochMs, type GeneratorCommand, type GeneratorMessage, type GeneratorOptions, type SecondPartial, type SegmentLoad, type SegmentPartial } from './generator.js'
import type { EndpointStats, LatencySummary, SecondSample } from './result.js'
import type { ScenarioRef } from './scenario.js'
import { totalDurationMs } from './schedule.js'
import { EndpointMap } from './stats.js'

const workerUrl = new URL('./generator-worker.js', import.meta.url)
/** Workers get this long to receive a segment before it starts. */
const segmentLeadMs = 100

export interface LoadSessionOptions {
  url: string
  workers: number
  /** Keep-alive connections in all (split over the workers). */
  connections: number
  requestTimeoutMs: number
  scenario: ScenarioRef
  data: unknown
  runId: string
  /** Endpoint names in report order. */
  endpointOrder: readonly string[]
  /** Called once per merged second, in order. */
  onSecond?: (sample: SecondSample) => void
}

export interface SegmentResult {
  phase: string | undefined
  /** Seconds of the run (`t`) the segment's schedule covered: (startT, endT]. */
  startT: number
  endT: number
  durationMs: number
  offered: number
  started: number
  achieved: number
  achievedInWindow: number
  dropped: number
  /** Every request the segment sent, whenever it ended. */
  endpoints: Record<string, EndpointStats>
  all: EndpointStats
  sendLag: LatencySummary | null
  iterationErrors: number
  firstIterationError: string | null
}

interface PendingSecond {
  received: number
  partial: Omit<SecondPartial, 'endpoints' | 'eventLoopUtilisation' | 't'>
  endpoints: EndpointMap
}

interface ShardHandle {
  worker: Worker
  eluSum: number
  eluSeconds: number
}

export class LoadSession {
  readonly seconds: SecondSample[] = []
  /** Every request of the run by endpoint (merged from the seconds). */
  readonly totals = new EndpointMap()
  readonly runStartEpochMs: number
  private readonly shards: ShardHandle[] = []
  private readonly pendingSeconds = new Map<number, PendingSecond>()
  private nextSecond = 1
  private segmentId = 0
  private readonly segmentWaiters = new Map<number, { partials: SegmentPartial[], resolve: (partials: SegmentPartial[]) => void }>()
  private readonly phaseByT: Array<{ fromT: number, phase: string | undefined }> = []
  private failure: Error | undefined
  private readonly failureListeners = new Set<(err: Error) => void>()
  private closing = false

  private constructor (private readonly options: LoadSessionOptions) {
    // Second 1 starts when the first segment can (workers need a moment to load).
    this.runStartEpochMs = Math.ceil(nowEpochMs() + 500)
  }

  static async start (options: LoadSessionOptions): Promise<LoadSession> {
    const session = new LoadSession(options)
    try {
      await session.startWorkers()
    } catch (err) {
      await session.close(true)
      throw err
    }
    return session
  }

  private async startWorkers (): Promise<void> {
    const { workers, connections } = this.options
    const ready: Array<Promise<void>> = []
    for (let shard = 0; shard < workers; shard++) {
      const workerData: GeneratorOptions = {
        shard,
        shards: workers,
        url: this.options.url,
        connections: Math.max(1, Math.ceil(connections / workers)),
        requestTimeoutMs: this.options.requestTimeoutMs,
        scenario: this.options.scenario,
        data: this.options.data,
        runStartEpochMs: this.runStartEpochMs,
        runId: this.options.runId,
      }
      const worker = new Worker(workerUrl, { workerData })
      const handle: ShardHandle = { worker, eluSum: 0, eluSeconds: 0 }
      this.shards.push(handle)
      ready.push(new Promise<void>((resolve, reject) => {
        worker.on('message', (message: GeneratorMessage) => {
          if (message.type === 'ready') resolve()
          else if (message.type === 'failed') {
            const err = new Error(`load generator ${shard} failed: ${message.message}`)
            reject(err)
            this.fail(err)
          } else this.receive(handle, message)
        })
        worker.once('error', (err) => {
          reject(err)
          this.fail(err)
        })
        worker.once('exit', (code) => {
          if (!this.closing) {
            const err = new Error(`load generator ${shard} exited with code ${code}`)
            reject(err)
            this.fail(err)
          }
        })
      }))
    }
    await Promise.all(ready)
  }

  private fail (err: Error): void {
    this.failure ??= err
    for (const listener of this.failureListeners) listener(err)
  }

  private receive (shard: ShardHandle, message: GeneratorMessage): void {
    if (message.type === 'second') {
      shard.eluSum += message.second.eventLoopUtilisation
      shard.eluSeconds++
      this.mergeSecond(message.second)
    } else if (message.type === 'segment-done') {
      const waiter = this.segmentWaiters.get(message.segment.id)
      if (waiter === undefined) return
      waiter.partials.push(message.segment)
      if (waiter.partials.length === this.shards.length) {
        this.segmentWaiters.delete(message.segment.id)
        waiter.resolve(waiter.partials)
      }
    }
  }

  private mergeSecond (second: SecondPartial): void {
    let pending = this.pendingSeconds.get(second.t)
    if (pending === undefined) {
      pending = { received: 0, partial: { offered: 0, started: 0, achieved: 0, dropped: 0, inFlight: 0, vus: 0 }, endpoints: new EndpointMap() }
      this.pendingSeconds.set(second.t, pending)
    }
    pending.received++
    for (const key of ['offered', 'started', 'achieved', 'dropped', 'inFlight', 'vus'] as const) pending.partial[key] += second[key]
    pending.endpoints.addPartials(second.endpoints)
    // Seconds complete in order: every shard sends every second.
    for (;;) {
      const next = this.pendingSeconds.get(this.nextSecond)
      if (next === undefined || next.received < this.shards.length) return
      this.pendingSeconds.delete(this.nextSecond)
      this.finishSecond(this.nextSecond, next)
      this.nextSecond++
    }
  }

  private phaseAt (t: number): string | undefined {
    let phase: string | undefined
    for (const entry of this.phaseByT) if (entry.fromT <= t) phase = entry.phase
    return phase
  }

  private finishSecond (t: number, pending: PendingSecond): void {
    const { partial, endpoints } = pending
    const phase = this.phaseAt(t)
    const sample: SecondSample = {
      t,
      ...(phase === undefined ? {} : { phase }),
      offered: partial.offered,
      started: partial.started,
      achieved: partial.achieved,
      dropped: partial.dropped,
      inFlight: partial.inFlight,
      vus: partial.vus,
      all: endpoints.all().toStats(),
      byEndpoint: endpoints.toStats(this.options.endpointOrder),
      healthz: null,
    }
    this.totals.add(endpoints)
    this.seconds.push(sample)
    this.options.onSecond?.(sample)
  }

  /** Runs one segment on every shard from the next whole second; resolves when all its requests have ended. */
  async runSegment (phase: string | undefined, load: SegmentLoad): Promise<SegmentResult> {
    if (this.failure !== undefined) throw this.failure
    const id = ++this.segmentId
    const now = nowEpochMs()
    const startT = Math.max(0, Math.ceil((now + segmentLeadMs - this.runStartEpochMs) / 1000))
    const startEpochMs = this.runStartEpochMs + startT * 1000
    const durationMs = totalDurationMs(load.stages)
    this.phaseByT.push({ fromT: startT + 1, phase })

    const partials = await new Promise<SegmentPartial[]>((resolve, reject) => {
      const onFailure = (err: Error): void => { reject(err) }
      this.failureListeners.add(onFailure)
      this.segmentWaiters.set(id, {
        partials: [],
        resolve: (done) => {
          this.failureListeners.delete(onFailure)
          resolve(done)
        },
      })
      const command: GeneratorCommand = { type: 'segment', segment: { id, phase, load, startEpochMs } }
      for (const shard of this.shards) shard.worker.postMessage(command)
    })

    const endpoints = new EndpointMap()
    const sendLag = createHistogram()
    const result: SegmentResult = {
      phase,
      startT,
      endT: startT + Math.ceil(durationMs / 1000),
      durationMs,
      offered: 0,
      started: 0,
      achieved: 0,
      achievedInWindow: 0,
      dropped: 0,
      endpoints: {},
      all: endpoints.all().toStats(),
      sendLag: null,
      iterationErrors: 0,
      firstIterationError: null,
    }
    for (const partial of partials) {
      for (const key of ['offered', 'started', 'achieved', 'achievedInWindow', 'dropped', 'iterationErrors'] as const) result[key] += partial[key]
      result.firstIterationError ??= partial.firstIterationError
      endpoints.addPartials(partial.endpoints)
      if (partial.sendLag !== '') addEncoded(sendLag, partial.sendLag)
    }
    result.endpoints = endpoints.toStats(this.options.endpointOrder)
    result.all = endpoints.all().toStats()
    result.sendLag = sendLag.totalCount === 0 ? null : summarise(sendLag)
    return result
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
    const closing = this.shards.map(async (shard) => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { void shard.worker.terminate().then(() => { resolve() }) }, abort ? 2000 : 60_000)
        shard.worker.on('message', (message: GeneratorMessage) => {
          if (message.type === 'closed') {
            clearTimeout(timer)
            resolve()
          }
        })
        shard.worker.once('exit', () => {
          clearTimeout(timer)
          resolve()
        })
        const command: GeneratorCommand = { type: 'close', abort }
        shard.worker.postMessage(command)
      })
    })
    await Promise.all(closing)
    await Promise.all(this.shards.map(async (shard) => await shard.worker.terminate()))
    this.pendingSeconds.clear()
  }
}
