/**
 * Scenarios: what one is (scenario.ts), the built-ins, loading a user's own from a JSON or JS
 * file, running a scenario's setup (setup.ts), and what the seed articles measured of each
 * (references.ts). Load-generator threads call `loadScenario` too: a scenario travels to them as
 * a name or a path, never as code.
 */
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { LabError } from '../errors.js'
import { rampThenHold, type Scenario, type ScenarioRef } from './scenario.js'
import { authPath } from './auth-path.js'
import { declarativeScenario } from './declarative.js'
import { devnest } from './devnest.js'
import { loginBurst } from './login-burst.js'
import { loginStorm } from './login-storm.js'
import { meCrowd } from './me-crowd.js'
import { mixedStorm } from './mixed-storm.js'
import { oidcStorm } from './oidc/index.js'
import { passkeyStorm } from './passkey-storm.js'
import { registration } from './registration.js'
import { stress } from './stress.js'

export { referencesFor } from './references.js'
export { type Scenario, type ScenarioRef, type SetupContext, type VirtualUser } from './scenario.js'
export { runScenarioSetup } from './setup.js'

export const builtInScenarios: Readonly<Record<string, Scenario<any>>> = {
  'login-storm': loginStorm,
  devnest,
  registration,
  stress,
  'auth-path': authPath,
  'me-crowd': meCrowd,
  'login-burst': loginBurst,
  'passkey-storm': passkeyStorm,
  'mixed-storm': mixedStorm,
  'oidc-storm': oidcStorm,
}

/** A name of a built-in scenario, or a path to a .json / .js / .mjs file. */
export function scenarioRef (nameOrPath: string): ScenarioRef {
  if (Object.hasOwn(builtInScenarios, nameOrPath)) return { builtin: nameOrPath }
  if (/\.(json|js|mjs)$/.test(nameOrPath)) return { file: path.resolve(nameOrPath) }
  throw new LabError(`unknown scenario "${nameOrPath}": use one of ${Object.keys(builtInScenarios).join(', ')}, or a path to a .json or .js file`, 'scenario')
}

function checkModule (file: string, value: unknown): Scenario {
  const scenario = value as Partial<Scenario> | null
  const fail = (message: string): never => { throw new LabError(`scenario ${file}: ${message}`) }
  if (typeof scenario !== 'object' || scenario === null) return fail('the default export must be a scenario object')
  if (typeof scenario.name !== 'string' || scenario.name === '') fail('name must be a non-empty string')
  if (typeof scenario.iteration !== 'function') fail('iteration must be an async function (vu, data)')
  if (scenario.setup !== undefined && typeof scenario.setup !== 'function') fail('setup must be a function')
  if (scenario.endpoints !== undefined && !Array.isArray(scenario.endpoints)) fail('endpoints must be an array of names')
  return {
    ...scenario as Scenario,
    description: scenario.description ?? `Scenario from ${file}`,
    endpoints: scenario.endpoints ?? [],
    defaults: { model: 'closed', stages: rampThenHold(10, 0.2), thinkTimeMs: 0, rate: 10, accounts: 0, ...scenario.defaults },
  }
}

export async function loadScenario (ref: ScenarioRef): Promise<Scenario<any>> {
  if ('builtin' in ref) {
    const scenario = builtInScenarios[ref.builtin]
    if (scenario === undefined) throw new LabError(`unknown scenario "${ref.builtin}"`, 'scenario')
    return scenario
  }
  if (!fs.existsSync(ref.file)) throw new LabError(`scenario file ${ref.file} does not exist`, 'scenario')
  if (ref.file.endsWith('.json')) {
    let raw: unknown
    try {
      raw = JSON.parse(fs.readFileSync(ref.file, 'utf8'))
    } catch (err) {
      throw new LabError(`scenario ${ref.file} is not valid JSON: ${(err as Error).message}`, 'scenario')
    }
    return declarativeScenario(ref.file, raw)
  }
  const module = await import(pathToFileURL(ref.file).href) as { default?: unknown }
  return checkModule(ref.file, module.default)
}
