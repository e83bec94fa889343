/**
 * The seed articles' own figures (../shared/seeds/), for the reports' reference
 * column: what they measured on their machines, labelled as theirs, next to
 * what the lab measures here. Never mixed into our figures.
 */
import type { ReferenceFigures } from '../result.js'

const nestjs = '100 Users Log In at Once and Your API Dies (NestJS, bcrypt, Kubernetes)'
const nestjsSetup = 'NestJS, 2 pods limited to 1 CPU each, bcrypt cost 10, k6 100 VUs ramping over 30 s'
const piscina = 'How I Scaled My Node.js API to Handle 5,000 Concurrent Users Using Piscina'
const piscinaSetup = 'DevNest API, bcrypt, k6 ramping to 100 VUs (register + login + post)'
const ramp = 'Load Testing the Registration API (Code of the Programmer)'
const starvation = 'Pool Starvation (loke.dev)'

const byScenario: Record<string, ReferenceFigures[]> = {
  'login-storm': [
    { source: nestjs, strategy: 'libuv', setup: nestjsSetup, p95Ms: 15_000, p99Ms: 30_000, errorRate: 0.34, note: 'before: bcrypt.compare on libuv\'s 4 threads; p99 is their 30 s client timeout; 504s at the ingress' },
    { source: nestjs, strategy: 'libuv-128', setup: nestjsSetup, p95Ms: 4_000, note: 'UV_THREADPOOL_SIZE=128: "p95 went from 15s to around 4s"' },
    { source: nestjs, strategy: 'spawn', setup: nestjsSetup, p95Ms: 380, p99Ms: 650, errorRate: 0, note: 'after: a native-script child process per compare; compare wall clock 90 to 110 ms, API pod CPU ~30 %' },
    { source: starvation, strategy: 'libuv', setup: '6 crypto.pbkdf2 calls at once on libuv\'s 4 threads', note: 'calls 5 and 6 took ~175 ms against ~90 ms: they waited for a thread; with UV_THREADPOOL_SIZE=6 all took ~100 ms. The libuv canary in /metrics is the article\'s own remedy for seeing this' },
  ],
  'auth-path': [
    { source: nestjs, strategy: 'libuv', setup: nestjsSetup, note: 'their diagnosis: "DB lookup only: fast, even under load; + JWT signing: still fine; + bcrypt.compare: everything collapsed" (no figures given)' },
  ],
  devnest: [
    { source: piscina, strategy: 'event-loop', setup: piscinaSetup, requestsPerSecond: 62, meanMs: 263.27, p50Ms: 69.51, p95Ms: 1520, errorRate: 0, note: 'baseline: synchronous bcrypt on the event loop; 2,592 requests' },
    { source: piscina, strategy: 'cluster', setup: piscinaSetup, requestsPerSecond: 114, meanMs: 51.3, p95Ms: 96.15, note: 'after: Piscina pool + cluster (one worker per core); 4,702 requests' },
  ],
  stress: [
    { source: piscina, strategy: 'cluster', setup: 'DevNest API, Piscina + cluster, k6 peaking at 5,000 VUs', requestsPerSecond: 1945, p95Ms: 66.04, errorRate: 0, note: 'peak throughput; 157,528 requests, 0 failed' },
  ],
  registration: [
    { source: ramp, strategy: 'libuv', setup: 'Next.js + PostgreSQL, bcrypt, 8-core development machine, loadtest +10 % per step from 100/s', kneePerSecond: 250, note: 'latency under 50 ms until ~250 requests/s, then a wall; without bcrypt the wall moved to ~500/s' },
  ],
}

export function referencesFor (scenario: string): ReferenceFigures[] {
  return byScenario[scenario] ?? []
}
