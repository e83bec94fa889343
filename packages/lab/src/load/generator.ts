/**
 * One load-generator shard, in a worker thread of its own (this file is both the shard and the
 * thread's entry): runs its share of the virtual users (closed model) or of the arrivals (open
 * model), and reports every second and every segment to the main thread as mergeable partials.
 */
import { performance } from 'node:perf_hooks'
import { isMainThread, parentPort, workerData } from 'node:worker_threads'
import { defaultLoadClient, HttpTarget, loopbackSourceAddresses, type HttpClientKind, type LabRequest, type LabResponse } from '../http/index.js'
import type { ArrivalRetry, SegmentLoad } from '../result.js'
import { loadScenario, type Scenario, type ScenarioRef, type VirtualUser } from '../scenarios/index.js'
import { nowEpochMs, secondOf } from '../time.js'
import { arrivalTimes, shareOf, totalDurationMs, vusAt } from './schedule.js'
import { Tally, type Counts, type RequestOutcome, type TallyPartial } from './stats.js'

export interface GeneratorOptions {
  shard: number
  shards: number
  url: string
  /** Keep-alive connections of this shard. */
  connections: number
  requestTimeoutMs: number
  /** Closed model: the users' connections come from this many loopback addresses (`loopbackSourceAddresses`); unset: 1. */
  sourceAddresses?: number
  /** The HTTP client of the load (`defaultLoadClient` when unset); `raw` sends with undici all the same to a target that is not plain http. */
  httpClient?: HttpClientKind
  scenario: ScenarioRef
  /** What the scenario's setup returned. */
  data: unknown
  /** Second 1 of the run is [runStartEpochMs, runStartEpochMs + 1000). */
  runStartEpochMs: number
  /** Unique to this lab run: fresh emails never collide with an earlier run's. */
  runId: string
}

export interface SegmentSpec {
  id: number
  phase: string | undefined
  load: SegmentLoad
  startEpochMs: number
}

export type GeneratorMessage =
  | { type: 'ready' }
  /** `eventLoopUtilisation`: of this shard's thread during the second (0..1). */
  | { type: 'second', t: number, tally: TallyPartial, eventLoopUtilisation: number }
  | { type: 'segment-done', id: number, tally: TallyPartial }
  | { type: 'failed', message: string }
  | { type: 'closed' }

export type GeneratorCommand =
  | { type: 'segment', segment: SegmentSpec }
  /** `abort`: stop at once, failing requests under way (Ctrl-C); otherwise let them end. */
  | { type: 'close', abort: boolean }

interface Segment { spec: SegmentSpec, endEpochMs: number, tally: Tally }

class LabVirtualUser implements VirtualUser {
  iteration = 0
  readonly state: Record<string, unknown> = {}
  phase: string | undefined
  /** The open model's intended start of this iteration: the first request's latency counts from it. */
  intendedEpochMs: number | null = null
  failed = false
  retryAfterSeconds: number | null = null
  /**
   * The closed model: when this user's pause after its last iteration (think time, or a 503's
   * Retry-After) ends, epoch ms. Kept across segments, and never cut short by a segment's end.
   */
  resumeAtEpochMs = 0

  /** `ownConnection`: a closed model's user, on a keep-alive connection of its own; an open model's arrivals share the pool. */
  constructor (readonly id: number, private readonly generator: LoadGenerator, private readonly ownConnection: boolean) {}

  unique (): string {
    return this.generator.unique()
  }

  /** A 503 sent again, at once or after its Retry-After, until another answer or the arrival's patience ends. */
  private async retried (retry: ArrivalRetry, first: LabResponse, endpoint: string, request: LabRequest, fromEpochMs: number, owner: number | undefined): Promise<LabResponse> {
    let response = first
    while (response.status === 503) {
      const waitMs = retry.clients === 'naive' ? 0 : (response.retryAfterSeconds ?? 1) * 1000
      if (nowEpochMs() + waitMs >= fromEpochMs + retry.patienceMs || !(await this.generator.pause(waitMs))) break
      response = await this.generator.send(endpoint, request, fromEpochMs, owner)
    }
    return response
  }

  /** Open model with `retry`: what this arrival does with a 503 (ArrivalRetry). */
  retry: ArrivalRetry | undefined

  async request (endpoint: string, request: LabRequest): Promise<LabResponse> {
    const fromEpochMs = this.intendedEpochMs ?? nowEpochMs()
    const owner = this.ownConnection ? this.id : undefined
    let response = await this.generator.send(endpoint, request, fromEpochMs, owner)
    if (this.retry !== undefined) response = await this.retried(this.retry, response, endpoint, request, fromEpochMs, owner)
    this.intendedEpochMs = null
    if (!response.ok) this.failed = true
    if (response.status === 503 && response.retryAfterSeconds !== null) this.retryAfterSeconds = response.retryAfterSeconds
    return response
  }
}

export class LoadGenerator {
  private readonly target: HttpTarget
  private readonly seconds = new Map<number, Tally>()
  private lastFlushedT = 0
  private flushTimer: NodeJS.Timeout | undefined
  private eluMark = performance.eventLoopUtilization()
  private inFlightRequests = 0
  private activeVus = 0
  private segment: Segment | undefined
  private stopping = false
  private readonly sleepers = new Set<() => void>()
  /** Closed model: each virtual user keeps its state across segments. */
  private readonly closedVus = new Map<number, LabVirtualUser>()
  /** Open model: idle in-flight slots, kept across segments with their state. */
  private readonly freeSlots: LabVirtualUser[] = []
  private openSlots = 0
  private uniques = 0

  constructor (private readonly options: GeneratorOptions, private readonly scenario: Scenario<unknown>, private readonly emit: (message: GeneratorMessage) => void) {
    this.target = new HttpTarget(options.url, { connections: options.connections, timeoutMs: options.requestTimeoutMs, sourceAddresses: loopbackSourceAddresses(options.url, options.sourceAddresses ?? 1), client: options.httpClient ?? defaultLoadClient })
    this.scheduleFlush()
  }

  /** Unique within the lab run across every shard: `<runId>-<shard>-<n>`. */
  unique (): string {
    return `${this.options.runId}-${this.options.shard}-${++this.uniques}`
  }

  /** The tally of the second containing `epochMs`; one already flushed folds into the oldest still open. */
  private second (epochMs: number): Tally {
    const t = Math.max(secondOf(epochMs, this.options.runStartEpochMs), this.lastFlushedT + 1)
    let tally = this.seconds.get(t)
    if (tally === undefined) this.seconds.set(t, tally = new Tally())
    return tally
  }

  /** Counts one iteration event in its second and in the segment. */
  private count (key: keyof Counts, epochMs: number, segment: Segment): void {
    this.second(epochMs).counts[key]++
    segment.tally.counts[key]++
  }

  private scheduleFlush (): void {
    // A few ms past the boundary, so responses that ended just before it are in.
    const delay = Math.max(0, this.options.runStartEpochMs + (this.lastFlushedT + 1) * 1000 - nowEpochMs() + 5)
    this.flushTimer = setTimeout(() => {
      this.flushUntil(secondOf(nowEpochMs(), this.options.runStartEpochMs) - 1)
      this.scheduleFlush()
    }, delay)
  }

  /** Sends every second up to and including `t` (empty ones too: the main thread waits for each shard's). */
  private flushUntil (t: number): void {
    while (this.lastFlushedT < t) {
      const second = ++this.lastFlushedT
      const tally = this.seconds.get(second) ?? new Tally()
      this.seconds.delete(second)
      tally.counts.inFlight = this.inFlightRequests
      tally.counts.vus = this.activeVus
      const elu = performance.eventLoopUtilization(this.eluMark)
      this.eluMark = performance.eventLoopUtilization()
      this.emit({ type: 'second', t: second, tally: tally.toPartial(), eventLoopUtilisation: elu.utilization })
    }
  }

  /**
   * Sends one request of an iteration (never throws) and counts it, timed from `fromEpochMs`, in
   * its second and segment; on `owner`'s own connection when there is one.
   */
  async send (endpoint: string, request: LabRequest, fromEpochMs: number, owner?: number): Promise<LabResponse> {
    this.inFlightRequests++
    const response = await this.target.send(request, owner).finally(() => { this.inFlightRequests-- })
    const endedAt = nowEpochMs()
    const outcome: RequestOutcome = { endpoint, status: response.status, ok: response.ok, failure: response.failure, retryAfter: response.retryAfterSeconds !== null, latencyMs: endedAt - fromEpochMs }
    this.second(endedAt).endpoints.get(endpoint).record(outcome)
    this.segment?.tally.endpoints.get(endpoint).record(outcome)
    return response
  }

  /** Waits `ms` (0: a turn of the event loop, so a naive retry loop never starves the thread's timers); false once the generator is stopping. */
  async pause (ms: number): Promise<boolean> {
    if (ms > 0) await this.sleep(ms)
    else await new Promise<void>((resolve) => { setImmediate(resolve) })
    return !this.stopping
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

  /** One iteration of the scenario; achieved when every request got a 2xx and nothing threw. */
  private async iterate (vu: LabVirtualUser, intendedEpochMs: number | null, segment: Segment): Promise<void> {
    const retry = segment.spec.load.model === 'open' ? segment.spec.load.retry : undefined
    Object.assign(vu, { intendedEpochMs, phase: segment.spec.phase, failed: false, retryAfterSeconds: null, retry })
    this.count('started', nowEpochMs(), segment)
    let achieved = false
    try {
      achieved = (await this.scenario.iteration(vu, this.options.data)) !== false && !vu.failed
    } catch (err) {
      segment.tally.counts.iterationErrors++
      segment.tally.firstIterationError ??= err instanceof Error ? err.message : String(err)
    }
    vu.iteration++
    const endedAt = nowEpochMs()
    if (achieved) this.count('achieved', endedAt, segment)
    if (achieved && endedAt <= segment.endEpochMs) segment.tally.counts.achievedInWindow++
  }

  async runSegment (spec: SegmentSpec): Promise<void> {
    const segment: Segment = { spec, endEpochMs: spec.startEpochMs + totalDurationMs(spec.load.stages), tally: new Tally() }
    this.segment = segment
    await this.sleep(spec.startEpochMs - nowEpochMs())
    if (spec.load.model === 'closed') await this.runClosed(segment, spec.load)
    else await this.runOpen(segment, spec.load)
    this.segment = undefined
    this.emit({ type: 'segment-done', id: spec.id, tally: segment.tally.toPartial() })
  }

  /** Virtual users i = shard, shard + shards ... each loop over the scenario while the stages want them. */
  private async runClosed (segment: Segment, load: Extract<SegmentLoad, { model: 'closed' }>): Promise<void> {
    const { shard, shards } = this.options
    const wanted = (): number => shareOf(vusAt(load.stages, nowEpochMs() - segment.spec.startEpochMs, load.startVus), shard, shards)
    const running = new Set<number>()
    const loops: Array<Promise<void>> = []
    const vuLoop = async (local: number): Promise<void> => {
      const id = local * shards + shard
      const vu = this.closedVus.get(id) ?? new LabVirtualUser(id, this, true)
      this.closedVus.set(id, vu)
      running.add(local)
      this.activeVus++
      try {
        while (!this.stopping && nowEpochMs() < segment.endEpochMs && local < wanted()) {
          // The pause after the last iteration is waited out to its end; one that outlasts the
          // segment ends this user's part in it, at the segment's end. Cut short there instead, a
          // timer that fired a millisecond early (they do: libuv's clock is the loop's) let one
          // more iteration start at the end, ignoring its Retry-After (in a polite login storm,
          // 23 to 45 logins a run held by the service's pacer for their whole second). Under a
          // millisecond left counts as over: another timer for the rest would wait a whole turn
          // of a busy loop (the `stress` mix's 5,000 users ran about 1 % fewer requests so).
          const pauseLeftMs = vu.resumeAtEpochMs - nowEpochMs()
          if (pauseLeftMs >= 1) {
            const segmentLeftMs = segment.endEpochMs - nowEpochMs()
            await this.sleep(Math.min(pauseLeftMs, segmentLeftMs))
            if (pauseLeftMs >= segmentLeftMs) break
            continue
          }
          this.count('offered', nowEpochMs(), segment)
          await this.iterate(vu, null, segment)
          const pause = load.honourRetryAfter && vu.retryAfterSeconds !== null ? vu.retryAfterSeconds * 1000 : load.thinkTimeMs
          vu.resumeAtEpochMs = nowEpochMs() + pause
        }
      } finally {
        running.delete(local)
        this.activeVus--
      }
    }
    while (!this.stopping && nowEpochMs() < segment.endEpochMs) {
      for (let local = 0; local < wanted(); local++) if (!running.has(local)) loops.push(vuLoop(local))
      await this.sleep(Math.min(50, segment.endEpochMs - nowEpochMs()))
    }
    // Graceful stop: iterations under way finish (each request is bounded by its timeout).
    await Promise.all(loops)
  }

  /** Arrivals k = shard, shard + shards ... of the global schedule, each sent at its intended time. */
  private async runOpen (segment: Segment, load: Extract<SegmentLoad, { model: 'open' }>): Promise<void> {
    const { shard, shards } = this.options
    const maxInFlight = Math.max(1, shareOf(load.maxInFlight, shard, shards))
    const inFlight = new Set<Promise<void>>()
    let k = 0
    for (const offsetMs of arrivalTimes(load.startRate, load.stages)) {
      if (this.stopping) break
      if (k++ % shards !== shard) continue
      const intended = segment.spec.startEpochMs + offsetMs
      if (intended - nowEpochMs() > 1) await this.sleep(intended - nowEpochMs())
      this.count('offered', intended, segment)
      if (inFlight.size >= maxInFlight) {
        this.count('dropped', intended, segment)
        continue
      }
      segment.tally.recordSendLag(Math.max(0, nowEpochMs() - intended))
      const vu = this.freeSlots.pop() ?? new LabVirtualUser((this.openSlots++) * shards + shard, this, false)
      const running = this.iterate(vu, intended, segment).finally(() => {
        inFlight.delete(running)
        this.freeSlots.push(vu)
      })
      inFlight.add(running)
    }
    // A schedule whose last arrival comes before the end still runs to the end.
    await this.sleep(segment.endEpochMs - nowEpochMs())
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
    this.flushUntil(secondOf(nowEpochMs(), this.options.runStartEpochMs))
  }
}

/** The thread's side: loads the scenario (by name or file), then runs the segments the main thread sends. */
const generatorOptions = isMainThread ? undefined : (workerData as { generator?: GeneratorOptions } | null)?.generator
if (generatorOptions !== undefined && parentPort !== null) {
  const port = parentPort
  const emit = (message: GeneratorMessage): void => { port.postMessage(message) }
  try {
    const generator = new LoadGenerator(generatorOptions, await loadScenario(generatorOptions.scenario), emit)
    let work: Promise<void> = Promise.resolve()
    port.on('message', (command: GeneratorCommand) => {
      if (command.type === 'segment') {
        work = work.then(async () => { await generator.runSegment(command.segment) }).catch((err: unknown) => {
          emit({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) })
        })
      } else {
        if (command.abort) generator.stop(true)
        void work.then(async () => {
          await generator.close()
          emit({ type: 'closed' })
          port.close()
        })
      }
    })
    emit({ type: 'ready' })
  } catch (err) {
    emit({ type: 'failed', message: err instanceof Error ? err.message : String(err) })
  }
}
