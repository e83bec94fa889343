/**
 * Setup before the load, not counted: pre-registered accounts under stable names, so a second run on the
 * same database reuses them (docs/how-to/run-the-lab.md, "Scenarios").
 */
import { HttpTarget, type LabRequest, type LabResponse } from '../http/index.js'
import { registerLabOidcClient } from './oidc/index.js'
import type { Account, LabOidcClient, Scenario, SetupContext } from './scenario.js'

const setupConcurrency = 4
const maxAttempts = 20

async function mapLimited<T, R> (items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index] as T, index)
    }
  }))
  return results
}

function describe (response: LabResponse): string {
  const error = (response.body as { error?: { code?: string, message?: string } } | undefined)?.error
  return response.status === null ? `${response.failure ?? 'failed'} (${response.detail ?? ''})` : `${response.status}${error?.code === undefined ? '' : ` ${error.code}: ${error.message ?? ''}`}`
}

class LabSetup implements SetupContext {
  readonly target: HttpTarget

  readonly accounts: number
  readonly log: (message: string) => void
  readonly passkeyShare: number | undefined
  private readonly adminEnv: Record<string, string> | undefined

  constructor (options: ScenarioSetupOptions) {
    this.target = new HttpTarget(options.url, { connections: setupConcurrency + 1, timeoutMs: options.timeoutMs })
    this.accounts = options.accounts
    this.log = options.log
    this.passkeyShare = options.passkeyShare
    this.adminEnv = options.adminEnv
  }

  async send (request: LabRequest): Promise<LabResponse> {
    for (let attempt = 1; ; attempt++) {
      const response = await this.target.send(request)
      const retry = (response.status === 503 && response.retryAfterSeconds !== null) || response.failure === 'timeout'
      if (!retry || attempt >= maxAttempts) return response
      await new Promise((resolve) => setTimeout(resolve, Math.max(100, (response.retryAfterSeconds ?? 1) * 1000)))
    }
  }

  async registerAccounts (count: number, label: string): Promise<Account[]> {
    const accounts = Array.from({ length: count }, (_, index): Account => ({ email: `lab.${label}.${index}@tollbooth.test`, password: `tollbooth lab ${label} ${index}` }))
    let existing = 0
    await mapLimited(accounts, setupConcurrency, async (account) => {
      const response = await this.send({ method: 'POST', path: '/api/v1/auth/register', body: account })
      if (response.status === 409) existing++
      else if (response.status === 202) throw new Error('setup: the service registers without signing in (TOLLBOOTH_REGISTRATION_MODE=enumeration-safe, its default): its new accounts cannot log in before their address is verified. Start it with TOLLBOOTH_REGISTRATION_MODE=immediate for the lab (the services the lab starts itself have it)')
      else if (!response.ok) throw new Error(`setup: registering ${account.email} failed: ${describe(response)}`)
    })
    const first = accounts[0]
    if (existing > 0 && first !== undefined) {
      // Accounts from an earlier run: check that they still take the lab's password.
      const login = await this.send({ method: 'POST', path: '/api/v1/auth/login', body: first })
      if (!login.ok) throw new Error(`setup: ${first.email} exists but does not log in with the lab's password (${describe(login)}); use a fresh database`)
    }
    this.log(`setup: ${count} accounts ready (${count - existing} registered, ${existing} from an earlier run)`)
    return accounts
  }

  async loginAccounts (accounts: readonly Account[]): Promise<string[]> {
    const tokens = await mapLimited(accounts, setupConcurrency, async (account) => {
      const response = await this.send({ method: 'POST', path: '/api/v1/auth/login', body: account })
      const token = (response.body as { accessToken?: string } | undefined)?.accessToken
      if (!response.ok || token === undefined) throw new Error(`setup: logging ${account.email} in failed: ${describe(response)}`)
      return token
    })
    this.log(`setup: ${tokens.length} accounts logged in`)
    return tokens
  }

  async registerOidcClient (label: string): Promise<LabOidcClient> {
    if (this.adminEnv === undefined) throw new Error('setup: the lab registers its OpenID Connect client in the service\'s database with `tollbooth clients add`: with --target, give that database as --database-url')
    const client = await registerLabOidcClient(this.adminEnv, label)
    this.log(`setup: OpenID Connect client ${client.clientId} registered (first-party, client_secret_basic)`)
    return client
  }
}

export interface ScenarioSetupOptions {
  /** The service the setup talks to. */
  url: string
  accounts: number
  log: (message: string) => void
  timeoutMs: number
  passkeyShare?: number | undefined
  /** The settings of `tollbooth clients` on the service's database, when the lab knows it (its own services, or --database-url). */
  adminEnv?: Record<string, string> | undefined
}

/** Runs the scenario's setup (if any) against `options.url`; what it returns goes to every iteration. */
export async function runScenarioSetup (scenario: Scenario<unknown>, options: ScenarioSetupOptions): Promise<unknown> {
  if (scenario.setup === undefined) return undefined
  const setup = new LabSetup(options)
  try {
    return await scenario.setup(setup)
  } finally {
    await setup.target.close()
  }
}
