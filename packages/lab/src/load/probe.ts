/**
 * Probes /healthz during a run, as a Kubernetes liveness probe would, from keep-alive
 * connections of its own, opened before the first timed probe (`warmUp`), at a given mean
 * rate and at random times (`probeTimes`). Latency counts from
 * each probe's intended time, so a frozen event loop shows as the wait it really caused.
 *
 * The probes are sent and timed in a worker thread of their own (this file is both
 * ends): the lab's main thread merges the generators' seconds and scrapes /metrics,
 * and a probe timed there waited for that work too. Measured in a 100-VU naive login
 * storm on 2 cores: probes timed on the main thread got p99 41 ms, a separate prober
 * of the same service in the same run 19 ms.
 *
 * With a `floorUrl` (an empty server: reference-server.ts), the same thread probes it at
 * the same rate, midway between each two service probes: what a probe gets on this
 * machine at this moment from a server with nothing else to do. A service's /healthz
 * figures are read against that floor, measured in the same run.
 */
import { EventEmitter } from 'node:events'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { HttpTarget } from '../http/index.js'
import type { LatencySummary, SecondSample } from '../result.js'
import { nowEpochMs, secondOf } from '../time.js'
import { createHistogram, recordMs, summarise, type LatencyHistogram } from './stats.js'

const maxInFlight = 16

interface ProbeSettings {
  url: string
  floorUrl?: string
  ratePerSecond: number
  runStartEpochMs: number
  timeoutMs: number
  /** Draws the probes' times from `seededRandom(seed)` instead of Math.random: the same times on every run (tests). */
  seed?: number
}

type ProbeMessage =
  /** `latencyMs` null: no answer to time (a refused connection, an error). `floor`: a probe of the empty server. */
  | { type: 'probe', floor: boolean, ok: boolean, latencyMs: number | null, endedEpochMs: number }
  | { type: 'skipped', floor: boolean }
  | { type: 'stopped' }

/** Probes of one server: all of them, and by the second they ended in. */
class ProbeRecord {
  readonly total: LatencyHistogram = createHistogram()
  readonly perSecond = new Map<number, LatencyHistogram>()
  /** Probes that got no 200 (an error status, a timeout, a refused connection). */
  failures = 0
  /** Probes not sent because `maxInFlight` were still waiting. */
  skipped = 0

  record (message: Extract<ProbeMessage, { type: 'probe' }>, runStartEpochMs: number): void {
    if (!message.ok) this.failures++
    if (message.latencyMs === null) return
    recordMs(this.total, message.latencyMs)
    const t = secondOf(message.endedEpochMs, runStartEpochMs)
    let histogram = this.perSecond.get(t)
    if (histogram === undefined) this.perSecond.set(t, histogram = createHistogram())
    recordMs(histogram, message.latencyMs)
  }

  /** The probes that ended in seconds `fromT` to `toT` (both included), null when none did. */
  between (fromT: number, toT: number): LatencySummary | null {
    const merged = createHistogram()
    for (const [t, histogram] of this.perSecond) if (t >= fromT && t <= toT) merged.add(histogram)
    return merged.totalCount === 0 ? null : summarise(merged)
  }

  second (t: number): LatencySummary | null {
    const histogram = this.perSecond.get(t)
    return histogram === undefined ? null : summarise(histogram)
  }
}

/**
 * The main thread's side: starts the prober thread and keeps what it measures. Emits `probe` each
 * time a probe (of the service or of the floor) is recorded or skipped, for whoever waits on the
 * counts.
 */
export class HealthzProbe extends EventEmitter<{ probe: [] }> {
  private readonly service = new ProbeRecord()
  private readonly floor = new ProbeRecord()
  private worker: Worker | undefined
  private stopped: Promise<void> = Promise.resolve()
  /** Why the prober thread failed, when it did. */
  error: string | undefined

  constructor (private readonly settings: ProbeSettings) {
    super()
  }

  /** Service probes that got no 200 (an error status, a timeout, a refused connection). */
  get failures (): number { return this.service.failures }
  /** Service probes not sent because `maxInFlight` were still waiting. */
  get skipped (): number { return this.service.skipped }
  /** Probes of the empty server that got no 200 or were not sent. */
  get floorFailures (): number { return this.floor.failures + this.floor.skipped }

  start (): void {
    if (this.settings.ratePerSecond <= 0) return
    const worker = new Worker(new URL(import.meta.url), { workerData: { healthzProbe: this.settings } })
    this.worker = worker
    this.stopped = new Promise((resolve) => {
      worker.on('message', (message: ProbeMessage) => {
        if (message.type === 'stopped') {
          void worker.terminate().then(() => { resolve() })
          return
        }
        const record = message.floor ? this.floor : this.service
        if (message.type === 'probe') record.record(message, this.settings.runStartEpochMs)
        else record.skipped++
        this.emit('probe')
      })
      worker.on('error', (err) => { this.error = err.message })
      worker.on('exit', () => { resolve() })
    })
  }

  /** Puts in a second of the run the probes of the service and of the empty server that ended in it (null where none did). */
  fill (sample: Pick<SecondSample, 't' | 'healthz' | 'healthzFloor'>): void {
    sample.healthz = this.service.second(sample.t)
    sample.healthzFloor = this.floor.second(sample.t)
  }

  /** Every service probe of the run, or null when the probe was off. */
  /** The service's probes that ended in seconds `fromT` to `toT` of the run (a knee's or a curve's step). */
  summaryBetween (fromT: number, toT: number): LatencySummary | null {
    return this.service.between(fromT, toT)
  }

  summary (): LatencySummary | null {
    return this.settings.ratePerSecond <= 0 ? null : summarise(this.service.total)
  }

  /** Every probe of the empty server, or null when there was none. */
  floorSummary (): LatencySummary | null {
    return this.settings.ratePerSecond <= 0 || this.settings.floorUrl === undefined ? null : summarise(this.floor.total)
  }

  /** Stops sending; resolves when the probes under way have ended and been recorded. */
  async stop (): Promise<void> {
    this.worker?.postMessage('stop')
    await this.stopped
  }
}

/**
 * When the probes go: a Poisson process at `ratePerSecond` from `startEpochMs` (exponential gaps,
 * so no probe is phase-locked to anything periodic), and with `withFloor` a probe of the empty
 * server midway between each two probes of the service. In time order, without end.
 *
 * Not a steady tick: probes every 100 ms from the run's start went out at the very millisecond of
 * the lab's own once-a-second `/metrics` scrape one time in ten, and waited for it. In naive
 * login storms those probes read a mean of 4.0 to 5.5 ms against 1.4 to 2.2 ms for each other
 * tenth of the second, and made two to six of a run's six slowest: the p99 measured the lab's
 * scrape more than the service (bench/README, "The `/healthz` tail in a naive storm").
 * Probes at random times see the service as an unsynchronised kubelet does (PASTA: Poisson
 * arrivals see time averages; RFC 2330, 11.1.1), a scrape included as often as it really happens.
 */
export function * probeTimes (startEpochMs: number, ratePerSecond: number, withFloor: boolean, random: () => number = Math.random): Generator<{ atEpochMs: number, floor: boolean }, never> {
  const gapMs = (): number => -Math.log(1 - random()) * 1000 / ratePerSecond
  let at = startEpochMs + gapMs()
  for (;;) {
    yield { atEpochMs: at, floor: false }
    const gap = gapMs()
    if (withFloor) yield { atEpochMs: at + gap / 2, floor: true }
    at += gap
  }
}

/** A seeded generator of numbers in [0, 1) (mulberry32): the same sequence for the same seed. */
export function seededRandom (seed: number): () => number {
  let state = seed | 0
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Connections each target gets before the first timed probe: probes at random times sometimes overlap, and the second then needs one of its own. */
const warmConnections = 2
/** How long the warm-up may take: past it, the probes due are sent anyway (a server that does not answer is theirs to report). */
const warmUpLimitMs = 2000

/**
 * Untimed requests that open each target's connections and run the sending code once, before
 * the first timed probe. Without them the run's first probe connected: in better-auth's scrypt
 * storm it left in the same moment as the 50 clients' own connections, and read 13 to 35 ms,
 * the slowest probe of each of three runs, up to 9 ms of it this thread's own late start
 * (bench/README, "The `/healthz` tail in a naive storm"). Every later probe reuses a warm
 * keep-alive connection; the first now does too. (A kubelet connects for every probe: the
 * lab's figures leave that connect out, for every probe alike.)
 */
async function warmUp (targets: ReadonlyArray<{ http: HttpTarget } | undefined>): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<void>((resolve) => { timer = setTimeout(resolve, warmUpLimitMs) })
  const requests = targets.flatMap((target) => target === undefined ? [] : Array.from({ length: warmConnections }, async () => { await target.http.send({ method: 'GET', path: '/healthz' }) }))
  await Promise.race([Promise.all(requests), limit])
  clearTimeout(timer)
}

/** The prober thread's side: sends, times, reports each probe, of the service and of the floor. */
function runProber (settings: ProbeSettings, post: (message: ProbeMessage) => void, onStop: (stop: () => void) => void): void {
  const targets = [false, true].map((floor) => {
    const url = floor ? settings.floorUrl : settings.url
    // The lab's own client, as the load's: undici cost this thread about a millisecond of CPU a probe, on the cores the service shares.
    return url === undefined ? undefined : { floor, http: new HttpTarget(url, { connections: maxInFlight, timeoutMs: settings.timeoutMs, client: 'raw' }), inFlight: new Set<Promise<void>>() }
  })
  const random = settings.seed === undefined ? Math.random : seededRandom(settings.seed)
  let timer: NodeJS.Timeout | undefined
  let stopping = false

  const fire = (intendedEpochMs: number, floor: boolean): void => {
    const target = targets[floor ? 1 : 0]
    if (target === undefined) return
    if (target.inFlight.size >= maxInFlight) {
      post({ type: 'skipped', floor })
      return
    }
    const probe = target.http.send({ method: 'GET', path: '/healthz' }).then((response) => {
      const endedEpochMs = nowEpochMs()
      const timed = response.status !== null || response.failure === 'timeout'
      post({ type: 'probe', floor, ok: response.status === 200, latencyMs: timed ? endedEpochMs - intendedEpochMs : null, endedEpochMs })
    }).finally(() => { target.inFlight.delete(probe) })
    target.inFlight.add(probe)
  }
  // The schedule is fixed now, from the run's start (or from now, if the thread started after it). A
  // warm-up that ends after the first probes were due sends them then, each timed from its own due
  // time: a service that answered nothing at the start shows as the wait it caused, not as a gap.
  const times = probeTimes(Math.max(nowEpochMs(), settings.runStartEpochMs), settings.ratePerSecond, settings.floorUrl !== undefined, random)
  let due = times.next().value
  void warmUp(targets).then(() => {
    if (stopping) return
    const tick = (): void => {
      if (stopping) return
      while (due.atEpochMs <= nowEpochMs()) {
        fire(due.atEpochMs, due.floor)
        due = times.next().value
      }
      timer = setTimeout(tick, Math.max(0, due.atEpochMs - nowEpochMs()))
    }
    timer = setTimeout(tick, Math.max(0, due.atEpochMs - nowEpochMs()))
  })

  onStop(() => {
    stopping = true
    clearTimeout(timer)
    // Settled, not all: send() never rejects, but should a probe's own bookkeeping throw, "stopped" still waits for both targets.
    void Promise.allSettled(targets.map(async (target) => {
      if (target === undefined) return
      await Promise.allSettled(target.inFlight)
      await target.http.close()
    })).finally(() => { post({ type: 'stopped' }) })
  })
}

const proberSettings = isMainThread ? undefined : (workerData as { healthzProbe?: ProbeSettings } | null)?.healthzProbe
if (proberSettings !== undefined && parentPort !== null) {
  const port = parentPort
  runProber(proberSettings, (message) => { port.postMessage(message) }, (stop) => { port.once('message', stop) })
}
