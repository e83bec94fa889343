/**
 * The figures a comparison shows for one run, derived from what the run
 * collected: throughput, latency, errors, and the server's worst moments.
 */
import { errorTotal } from './stats.js'
import type { RunResult, RunSummary, ServerSample } from './result.js'

function maxOf (samples: readonly ServerSample[], pick: (sample: ServerSample) => number | null): number | null {
  let max: number | null = null
  for (const sample of samples) {
    const value = pick(sample)
    if (value !== null && (max === null || value > max)) max = value
  }
  return max
}

function meanOf (samples: readonly ServerSample[], pick: (sample: ServerSample) => number | null): number | null {
  const values = samples.map(pick).filter((value): value is number => value !== null)
  return values.length === 0 ? null : Math.round((values.reduce((sum, value) => sum + value, 0) / values.length) * 1000) / 1000
}

/** Seconds with load in them: the ones the schedule offered work in (the drain after the end is left out). */
function loadedSeconds (run: Omit<RunResult, 'summary'>): number {
  const offered = run.seconds.filter((sample) => sample.offered > 0 || sample.started > 0)
  return Math.max(1, offered.length)
}

export function summariseRun (run: Omit<RunResult, 'summary'>): RunSummary {
  const seconds = loadedSeconds(run)
  const achieved = run.seconds.reduce((sum, sample) => sum + sample.achieved, 0)
  const errors = errorTotal(run.all.errors)
  // The service's whole process tree when the lab started it (children and cluster workers included).
  const treeKnown = run.server.some((sample) => sample.processTreeCpuCores !== null)
  return {
    durationSeconds: seconds,
    achievedPerSecond: Math.round((achieved / seconds) * 100) / 100,
    requestsPerSecond: Math.round((run.all.requests / seconds) * 100) / 100,
    requests: run.all.requests,
    ok: run.all.ok,
    latency: run.all.latency,
    okLatency: run.all.okLatency,
    errors: run.all.errors,
    errorRate: run.all.requests === 0 ? 0 : Math.round((errors / run.all.requests) * 10000) / 10000,
    healthz: run.healthz,
    eventLoopDelayP99MaxMs: maxOf(run.server, (sample) => sample.eventLoopDelayP99Ms),
    libuvCanaryMaxMs: maxOf(run.server, (sample) => sample.libuvCanaryMs),
    cpuCoresMean: treeKnown ? meanOf(run.server, (sample) => sample.processTreeCpuCores) : meanOf(run.server, (sample) => sample.cpuCores),
    peakRssBytes: treeKnown ? maxOf(run.server, (sample) => sample.processTreeRssBytes) : maxOf(run.server, (sample) => sample.rssBytes),
  }
}
