/**
 * One load-generator shard: runs its share of the virtual users (closed model)
 * or of the arrivals (open model) against the target, and reports every second
 * and every segment to the main thread as mergeable partials. It runs in a
 * worker thread (generator-worker.ts), so several can share the load and none
 * of them competes with the main thread's probes and scrapes.
 *
 * Time is wall-clock epoch milliseconds at sub-millisecond resolution
 * (performance.timeOrigin + performance.now()), the same clock in every thread,
 * so second `t` means the same interval for every shard.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks'
import { createHistogram, encodeHistogram, recordMs } from './histogram.js'
import { HttpTarget, type LabRequest, type LabResponse } from './http.js'
import type { Scenario, ScenarioRef, VirtualUser } from './scenario.js'
import { arrivalTimes, shareOf, totalDurationMs, vusAt } from './schedule.js'
import { EndpointMap, type EndpointPartial, type RequestOutcome } from './stats.js'
import type { Stage } from './result.js'

export function nowEpochMs (): number {
  return performance.timeOrigin + performance.now()
}

export interface GeneratorOptions {
  shard: number
  shards: number
  url: string
  /** Keep-alive connections of this shard. */
  connections: number
  requestTimeoutMs: number
  scenario: ScenarioRef
  /** What the scenario's setup returned. */
  data: unknown
  /** Second 1 of the run is [runStartEpochMs, runStartEpochMs + 1000). */
  runStartEpochMs: number
  /** Unique to this lab run: fresh emails never collide with an earlier run's. */
  runId: string
}

export type SegmentLoad =
  | { model: 'closed', startVus: number, stages: Stage[], thinkTimeMs: number, honourRetryAfter: boolean }
  | { model: 'open', startRate: number, stages: Stage[], maxInFlight: number }

export interface SegmentSpec {
  id: number
  phase: string | undefined
  load: SegmentLoad
  startEpochMs: number
}

/** Iteration counters; "offered" is what the schedule asked for. */
export interface IterationCounts {
  offered: number
  started: number
  achieved: number
  dropped: number
}

export interface SecondPartial extends IterationCounts {
  t: number
  inFlight: number
  vus: number
  endpoints: Record<string, EndpointPartial>
  /** Event-loop utilisation of this shard's thread during the second (0..1). */
  eventLoopUtilisation: number
}

export interface SegmentPartial extends IterationCounts {
  id: number
  /** Achieved before the segment's schedule ended (its throughput window). */
  achievedInWindow: number
  /** Every request the segment sent, by endpoint, whenever it ended. */
  endpoints: Record<string, EndpointPartial>
  /** Encoded histogram of how late arrivals were sent (open model), or ''. */
  sendLag: string
  iterationErrors: number
  firstIterationError: string | null
}

export type GeneratorMessage =
  | { type: 'ready' }
  | { type: 'second', second: SecondPartial }
  | { type: 'segment-done', segment: SegmentPartial }
  | { type: 'failed', message: string }
  | { type: 'closed' }

export type GeneratorCommand =
  | { type: 'segment', segment: SegmentSpec }
  /** `abort`: stop at once, failing requests under way (Ctrl-C); otherwise let them end. */
  | { type: 'close', abort: boolean }

interface Bucket extends IterationCounts {
  endpoints: EndpointMap
}

interface SegmentState {
  spec: SegmentSpec
  endEpochMs: number
  counts: IterationCounts & { achievedInWindow: number }
  endpoints: EndpointMap
  sendLag: ReturnType<typeof createHistogram>
  iterationErrors: number
  firstIterationError: string | null
}

function emptyBucket (): Bucket {
  return { offered: 0, started: 0, achieved: 0, dropped: 0, endpoints: new EndpointMap() }
}

class LabVirtualUser implements VirtualUser {
  iteration = 0
  readonly state: Record<string, unknown> = {}
  phase: string | undefined
  /** The open model's intended start of this iteration: the first request's latency counts from it. */
  intendedEpochMs: number | null = null
  failed = false
  retryAfterSeconds: number | null = null

  constructor (readonly id: number, private readonly generator: LoadGenerator) {}

  begin (intendedEpochMs: number | null, phase: string | undefined): void {
    this.intendedEpochMs = intendedEpochMs
    this.phase = phase
    this.failed = false
    this.retryAfterSeconds = null
  }

  unique (): string {
    return this.generator.unique()
  }

  async request (endpoint: string, request: LabRequest): Promise<LabResponse> {
    const sentAt = nowEpochMs()
    const from = this.intendedEpochMs ?? sentAt
    this.intendedEpochMs = null
    const response = await this.generator.send(request)
    this.generator.record({
      endpoint,
      status: response.status,
      failure: response.failure,
      retryAfter: response.retryAfterSeconds !== null,
      latencyMs: nowEpochMs() - from,
    })
    if (!response.ok) this.failed = true
    if (response.status === 503 && response.retryAfterSeconds !== null) this.retryAfterSeconds = response.retryAfterSeconds
    return response
  }
}

export class LoadGenerator {
  readonly runId: string
  private readonly target: HttpTarget
  private readonly buckets = new Map<number, Bucket>()
  private lastFlushedT = 0
  private flushTimer: NodeJS.Timeout | undefined
  private eluMark: EventLoopUtilization = performance.eventLoopUtilization()
  private inFlightRequests = 0
  private activeVus = 0
  private segment: SegmentState | undefined
  private stopping = false
  private readonly sleepers = new Set<() => void>()
  /** Closed model: each virtual user keeps its state across segments. */
  private readonly closedVus = new Map<number, LabVirtualUser>()
  /** Open model: idle in-flight slots, kept across segments with their state. */
  private readonly freeSlots: LabVirtualUser[] = []
  private openSlots = 0
  private uniques = 0

  constructor (private readonly options: GeneratorOptions, private readonly scenario: Scenario<unknown>, private readonly emit: (message: GeneratorMessage) => void) {
    this.runId = options.runId
    this.target = new HttpTarget(options.url, { connections: options.connections, timeoutMs: options.requestTimeoutMs })
    this.scheduleFlush()
  }

  /** Unique within the lab run across every shard: `<runId>-<shard>-<n>`. */
  unique (): string {
    return `${this.runId}-${this.options.shard}-${++this.uniques}`
  }

  private tOf (epochMs: number): number {
    return Math.max(1, Math.floor((epochMs - this.options.runStartEpochMs) / 1000) + 1)
  }

  /** The bucket of the second containing `epochMs`; one already flushed folds into the oldest still open. */
  private bucket (epochMs: number): Bucket {
    const t = Math.max(this.tOf(epochMs), this.lastFlushedT + 1)
    let bucket = this.buckets.get(t)
    if (bucket === undefined) {
      bucket = emptyBucket()
      this.buckets.set(t, bucket)
    }
    return bucket
  }

  private scheduleFlush (): void {
    const nextBoundary = this.options.runStartEpochMs + (this.lastFlushedT + 1) * 1000
    // A few ms past the boundary, so responses that ended just before it are in.
    const delay = Math.max(0, nextBoundary - nowEpochMs() + 5)
    this.flushTimer = setTimeout(() => {
      this.flushUntil(this.tOf(nowEpochMs()) - 1)
      this.scheduleFlush()
    }, delay)
  }

  /** Sends every second up to and including `t` (empty ones too: the main thread waits for each shard's). */
  private flushUntil (t: number): void {
    while (this.lastFlushedT < t) {
      const second = this.lastFlushedT + 1
      const bucket = this.buckets.get(second) ?? emptyBucket()
      this.buckets.delete(second)
      const elu = performance.eventLoopUtilization(this.eluMark)
      this.eluMark = performance.eventLoopUtilization()
      this.lastFlushedT = second
      this.emit({
        type: 'second',
        second: {
          t: second,
          offered: bucket.offered,
          started: bucket.started,
          achieved: bucket.achieved,
          dropped: bucket.dropped,
          inFlight: this.inFlightRequests,
          vus: this.activeVus,
          endpoints: bucket.endpoints.toPartials(),
          eventLoopUtilisation: elu.utilization,
        },
      })
    }
  }

  async send (request: LabRequest): Promise<LabResponse> {
    this.inFlightRequests++
    try {
      return await this.target.send(request)
    } finally {
      this.inFlightRequests--
    }
  }

  record (outcome: RequestOutcome): void {
    this.bucket(nowEpochMs()).endpoints.get(outcome.endpoint).record(outcome)
    this.segment?.endpoints.get(outcome.endpoint).record(outcome)
  }

  private async sleep (ms: number): Promise<void> {
    if (ms <= 0 || this.stopping) return
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.sleepers.add(done)
    })
  }

  private async sleepUntil (epochMs: number): Promise<void> {
    await this.sleep(epochMs - nowEpochMs())
  }

  /** One iteration of the scenario; returns whether it was achieved (every request 2xx, no throw). */
  private async iterate (vu: LabVirtualUser, intendedEpochMs: number | null, segment: SegmentState): Promise<void> {
    const startedAt = nowEpochMs()
    vu.begin(intendedEpochMs, segment.spec.phase)
    this.bucket(startedAt).started++
    segment.counts.started++
    let achieved = false
    try {
      const returned = await this.scenario.iteration(vu, this.options.data)
      achieved = returned !== false && !vu.failed
    } catch (err) {
      segment.iterationErrors++
      segment.firstIterationError ??= err instanceof Error ? err.message : String(err)
    }
    vu.iteration++
    if (achieved) {
      const endedAt = nowEpochMs()
      this.bucket(endedAt).achieved++
      segment.counts.achieved++
      if (endedAt <= segment.endEpochMs) segment.counts.achievedInWindow++
    }
  }

  async runSegment (spec: SegmentSpec): Promise<void> {
    const load = spec.load
    const segment: SegmentState = {
      spec,
      endEpochMs: spec.startEpochMs + totalDurationMs(load.stages),
      counts: { offered: 0, started: 0, achieved: 0, dropped: 0, achievedInWindow: 0 },
      endpoints: new EndpointMap(),
      sendLag: createHistogram(),
      iterationErrors: 0,
      firstIterationError: null,
    }
    this.segment = segment
    await this.sleepUntil(spec.startEpochMs)
    if (load.model === 'closed') await this.runClosed(segment, load)
    else await this.runOpen(segment, load)
    this.segment = undefined
    this.emit({
      type: 'segment-done',
      segment: {
        id: spec.id,
        ...segment.counts,
        endpoints: segment.endpoints.toPartials(),
        sendLag: segment.sendLag.totalCount === 0 ? '' : encodeHistogram(segment.sendLag),
        iterationErrors: segment.iterationErrors,
        firstIterationError: segment.firstIterationError,
      },
    })
  }

  /** Virtual users i = shard, shard + shards ... each loop over the scenario while the stages want them. */
  private async runClosed (segment: SegmentState, load: Extract<SegmentLoad, { model: 'closed' }>): Promise<void> {
    const { shard, shards } = this.options
    const start = segment.spec.startEpochMs
    const wanted = (): number => shareOf(vusAt(load.stages, nowEpochMs() - start, load.startVus), shard, shards)
    const running = new Set<number>()
    const loops: Array<Promise<void>> = []

    const vuLoop = async (local: number): Promise<void> => {
      const id = local * shards + shard
      let vu = this.closedVus.get(id)
      if (vu === undefined) {
        vu = new LabVirtualUser(id, this)
        this.closedVus.set(id, vu)
      }
      running.add(local)
      this.activeVus++
      try {
        while (!this.stopping && nowEpochMs() < segment.endEpochMs && local < wanted()) {
          segment.counts.offered++
          this.bucket(nowEpochMs()).offered++
          await this.iterate(vu, null, segment)
          const remaining = segment.endEpochMs - nowEpochMs()
          if (load.honourRetryAfter && vu.retryAfterSeconds !== null) await this.sleep(Math.min(vu.retryAfterSeconds * 1000, remaining))
          else if (load.thinkTimeMs > 0) await this.sleep(Math.min(load.thinkTimeMs, remaining))
        }
      } finally {
        running.delete(local)
        this.activeVus--
      }
    }

    while (!this.stopping && nowEpochMs() < segment.endEpochMs) {
      const target = wanted()
      for (let local = 0; local < target; local++) {
        if (!running.has(local)) loops.push(vuLoop(local))
      }
      await this.sleep(Math.min(50, segment.endEpochMs - nowEpochMs()))
    }
    // Graceful stop: iterations under way finish (each request is bounded by its timeout).
    await Promise.all(loops)
  }

  /** Arrivals k = shard, shard + shards ... of the global schedule, each sent at its intended time. */
  private async runOpen (segment: SegmentState, load: Extract<SegmentLoad, { model: 'open' }>): Promise<void> {
    const { shard, shards } = this.options
    const start = segment.spec.startEpochMs
    const maxInFlight = Math.max(1, shareOf(load.maxInFlight, shard, shards))
    const inFlight = new Set<Promise<void>>()
    let k = 0
    for (const offsetMs of arrivalTimes(load.startRate, load.stages)) {
      if (this.stopping) break
      if (k++ % shards !== shard) continue
      const intended = start + offsetMs
      if (intended - nowEpochMs() > 1) await this.sleepUntil(intended)
      segment.counts.offered++
      this.bucket(intended).offered++
      if (inFlight.size >= maxInFlight) {
        segment.counts.dropped++
        this.bucket(intended).dropped++
        continue
      }
      recordMs(segment.sendLag, Math.max(0, nowEpochMs() - intended))
      const vu = this.freeSlots.pop() ?? new LabVirtualUser((this.openSlots++) * shards + shard, this)
      const running = this.iterate(vu, intended, segment).finally(() => {
        inFlight.delete(running)
        this.freeSlots.push(vu)
      })
      inFlight.add(running)
    }
    // A schedule whose last arrival comes before the end still runs to the end.
    await this.sleepUntil(segment.endEpochMs)
    await Promise.all(inFlight)
  }

  /** Stops starting work at once; with `abort`, requests under way fail instead of ending. */
  stop (abort: boolean): void {
    this.stopping = true
    for (const wake of [...this.sleepers]) wake()
    if (abort) void this.target.destroy()
  }

  /** After the segments: lets requests under way end and sends the last seconds. */
  async close (): Promise<void> {
    this.stop(false)
    clearTimeout(this.flushTimer)
    // After an abort the pool is destroyed already, and closing it again rejects.
    await this.target.close().catch(() => {})
    this.flushUntil(this.tOf(nowEpochMs()))
  }
}
