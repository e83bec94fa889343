/**
 * What a scenario is: an optional setup (not counted) and the iteration one virtual user or one arrival runs.
 * Built-ins live beside this file; a user's own is a JSON file (declarative steps) or a JS module of this shape.
 */
import type { LabRequest, LabResponse } from '../http/index.js'
import type { Stage } from '../result.js'

export interface Account {
  email: string
  password: string
}

/** The lab's relying party at the service's OpenID Connect provider (a first-party confidential client). */
export interface LabOidcClient {
  clientId: string
  clientSecret: string
  /** Registered for the client; the walk stops at the redirect to it. */
  redirectUri: string
}

export interface SetupContext {
  /** A request that is not counted in the results; 503s are retried after their Retry-After. */
  send (request: LabRequest): Promise<LabResponse>
  /**
   * Registers `count` accounts named after `label` (idempotent: an account that
   * exists, from an earlier run on the same database, is kept and checked).
   */
  registerAccounts (count: number, label: string): Promise<Account[]>
  /** Logs each account in; returns their access tokens, in order. */
  loginAccounts (accounts: readonly Account[]): Promise<string[]>
  /**
   * Registers the lab's OpenID Connect client `tollbooth-lab-<label>` afresh with `tollbooth clients
   * add` on the service's database: known for services the lab starts, else `--database-url`.
   */
  registerOidcClient (label: string): Promise<LabOidcClient>
  /** Accounts the user asked for (`--accounts`), else the scenario's default. */
  readonly accounts: number
  /** mixed-storm: the share of users signing in with a passkey (`--passkey-share`), else the scenario's default; unset for the others. */
  readonly passkeyShare: number | undefined
  log (message: string): void
}

export interface VirtualUser {
  /** The virtual user's number (closed model), or the in-flight slot that runs this arrival (open model). */
  readonly id: number
  /** Iterations this virtual user ran before this one. */
  readonly iteration: number
  /** Kept across this virtual user's iterations (a token, a cursor ...). */
  readonly state: Record<string, unknown>
  /** The phase running now (auth-path), else undefined. */
  readonly phase: string | undefined
  /** A string unique to this lab run, virtual user and call: fresh emails. */
  unique (): string
  /**
   * Sends a request and counts it under `endpoint`. Never throws for HTTP or
   * network failures: look at `ok`, `status` and `failure`. A request that is not
   * ok (2xx; or 3xx, with `redirectIsOk`) marks the iteration as not achieved.
   */
  request (endpoint: string, request: LabRequest): Promise<LabResponse>
}

/** What a run of the scenario is when the user does not say otherwise. */
interface ScenarioDefaults {
  model: 'closed' | 'open'
  /** Closed model: this many users from the start, for the whole run (as --vus); else `stages`. */
  vus?: number
  /** Closed model: the stages when the user gives neither --vus nor --stages, for a run of `durationMs`; unset: one user. */
  stages?: (durationMs: number) => Stage[]
  thinkTimeMs: number
  /** Open model (and knee): the starting arrival rate. */
  rate: number
  accounts: number
  /** How long the run (a phased scenario: each phase) lasts without --duration; unset: 30 s. */
  durationMs?: number
  /** Closed model: the users connect from this many loopback addresses without --source-addresses (at most one each); unset: one. */
  sourceAddresses?: number
  /** The share of users signing in with a passkey without --passkey-share (0 to 1); unset: the scenario takes no such share. */
  passkeyShare?: number
}

export interface Scenario<Data = unknown> {
  name: string
  description: string
  /** The endpoint names it counts requests under, in the order reports should show them. */
  endpoints: string[]
  /** Sequential phases: the whole load runs once per phase. */
  phases?: string[]
  /** The lab starts its own service with the lab diagnostic routes on for this scenario. */
  needsLabDiagnostics?: boolean
  /**
   * Settings the services the lab starts need for this scenario (the OpenID Connect provider on);
   * in a compare, every service of the command is started with them, so its runs differ only by
   * scenario. `--service-env` overrides them.
   */
  serviceEnv?: Readonly<Record<string, string>>
  defaults: ScenarioDefaults
  /** Runs once before the load; what it returns (structured-clone friendly) reaches every iteration. */
  setup?: (context: SetupContext) => Promise<Data>
  /** One iteration. Return false (or throw) to mark it as not achieved. */
  iteration: (vu: VirtualUser, data: Data) => Promise<boolean | undefined | void>
}

/** Where a load-generator thread finds the scenario: by name, or a file it imports. */
export type ScenarioRef = { builtin: string } | { file: string }

/** Closed-model stages that ramp to `vus` over `rampShare` of the run, then hold. */
export function rampThenHold (vus: number, rampShare = 1 / 3) {
  return (durationMs: number): Stage[] => {
    const rampMs = Math.max(1, Math.round(durationMs * rampShare))
    return [{ durationMs: rampMs, target: vus }, { durationMs: Math.max(1, durationMs - rampMs), target: vus }]
  }
}
