/**
 * `auth-path`, the NestJS article's diagnosis (the guide's scenario table). Needs the service's lab diagnostic
 * routes, which the lab turns on (the launcher's `harness.labDiagnostics`) only for services it starts itself.
 */
import { rampThenHold, type Account, type Scenario } from './scenario.js'

const authPathPhases = ['noop', 'jwt-only', 'full'] as const

export const authPath: Scenario<{ accounts: Account[] }> = {
  name: 'auth-path',
  description: 'The login route with the hash replaced by a no-op, then by JWT signing only, then in full (the NestJS article\'s diagnosis); each phase runs the whole load.',
  endpoints: authPathPhases.map((phase) => `POST /lab/login?hash=${phase}`),
  phases: [...authPathPhases],
  needsLabDiagnostics: true,
  defaults: { model: 'closed', stages: rampThenHold(100, 0.2), thinkTimeMs: 0, rate: 10, accounts: 50 },
  async setup (context) {
    const accounts = await context.registerAccounts(context.accounts, 'auth-path')
    const probe = await context.send({ method: 'POST', path: '/api/v1/lab/login?hash=noop', body: accounts[0] })
    if (probe.status === 404) {
      throw new Error('the service has no lab diagnostic routes: let the lab start its own (omit --target), or start it through tollbooth/launcher with `harness: { labDiagnostics: true }`')
    }
    return { accounts }
  },
  async iteration (vu, { accounts }) {
    const account = accounts[(vu.id + vu.iteration) % accounts.length]
    const phase = vu.phase ?? 'full'
    if (account === undefined) return false
    const response = await vu.request(`POST /lab/login?hash=${phase}`, { method: 'POST', path: `/api/v1/lab/login?hash=${phase}`, body: account })
    return response.ok
  },
}
