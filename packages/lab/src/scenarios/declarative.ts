/**
 * A scenario as a JSON file: steps run in order by each iteration, with `{{...}}` placeholders
 * and values saved from earlier responses (docs/how-to/run-the-lab.md, "Your own scenario", shows one).
 */
import { Type, type Static } from '@sinclair/typebox'
import { LabError, validated } from '../errors.js'
import type { LabRequest } from '../http/index.js'
import { parseDurationMs } from '../time.js'
import { rampThenHold, type Account, type Scenario, type VirtualUser } from './scenario.js'

const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
const builtInVariables = ['account.email', 'account.password', 'unique', 'vu', 'iteration']
const placeholder = /\{\{\s*([\w.-]+)\s*\}\}/g

const stringMap = (description: string) => Type.Optional(Type.Record(Type.String(), Type.String(), { description }))
const count = Type.Optional(Type.Number({ minimum: 0, description: 'must be a number >= 0' }))

/** Each schema's description is the message a file that breaks it gets, after the field's path. */
const StepFile = Type.Object({
  endpoint: Type.Optional(Type.String({ minLength: 1, description: 'must be a non-empty string' })),
  method: Type.Union(methods.map((method) => Type.Literal(method)), { description: `must be one of ${methods.join(', ')}` }),
  path: Type.String({ pattern: '^/', description: 'must be a string starting with /' }),
  body: Type.Optional(Type.Unknown()),
  token: Type.Optional(Type.String({ description: 'must be a string' })),
  headers: stringMap('must map names to strings'),
  save: stringMap('must map variable names to response paths'),
}, { additionalProperties: false, description: 'must be an object' })

const ScenarioFile = Type.Object({
  name: Type.String({ minLength: 1, description: 'must be a non-empty string' }),
  description: Type.Optional(Type.String({ description: 'must be a string' })),
  model: Type.Optional(Type.Union([Type.Literal('closed'), Type.Literal('open')], { description: 'must be "closed" or "open"' })),
  vus: count,
  rate: count,
  accounts: count,
  thinkTime: Type.Optional(Type.String({ description: 'must be a duration string like "500ms"' })),
  steps: Type.Array(StepFile, { minItems: 1, description: 'must be a non-empty array' }),
}, { additionalProperties: false, description: 'must be a JSON object' })

interface Step extends Static<typeof StepFile> {
  endpoint: string
  save: Record<string, string>
}

function invalid (file: string, message: string): never {
  throw new LabError(`scenario ${file}: ${message}`)
}

function substitute (value: unknown, variables: (name: string) => string): unknown {
  if (typeof value === 'string') {
    // Every placeholder becomes text, even one that is the whole string: a saved number is sent as its digits.
    return value.replace(placeholder, (_match, name: string) => variables(name))
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, variables))
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, variables)]))
  return value
}

function pluck (body: unknown, dottedPath: string): unknown {
  let current = body
  for (const key of dottedPath.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined
    current = (current as Record<string, unknown>)[key]
  }
  return current
}

/** Validates a parsed JSON scenario (CONFIG_INVALID naming the field) and returns it as a Scenario. */
export function declarativeScenario (file: string, raw: unknown): Scenario<{ accounts: Account[] }> {
  const scenario = validated(ScenarioFile, raw, `scenario ${file}: `, 'the scenario')
  const steps: Step[] = scenario.steps.map((step) => ({
    ...step,
    endpoint: step.endpoint ?? `${step.method} ${step.path.replace(/^\/api\/v1/, '').split('?')[0] ?? step.path}`,
    save: step.save ?? {},
  }))
  const accounts = scenario.accounts ?? 0

  const saved = new Set(steps.flatMap((step) => Object.keys(step.save)))
  for (const [index, step] of steps.entries()) {
    const names: string[] = []
    substitute([step.path, step.body, step.token, step.headers], (name) => String(names.push(name)))
    for (const name of names) {
      if (!builtInVariables.includes(name) && !saved.has(name)) {
        invalid(file, `steps[${index}] uses {{${name}}}, which is neither built in (${builtInVariables.join(', ')}) nor saved by a step`)
      }
      if (name.startsWith('account.') && accounts === 0) invalid(file, `steps[${index}] uses {{${name}}}: set "accounts" to register some in setup`)
    }
  }
  const name = scenario.name
  return {
    name,
    description: scenario.description ?? `Steps from ${file}`,
    endpoints: [...new Set(steps.map((step) => step.endpoint))],
    defaults: {
      model: scenario.model ?? 'closed',
      stages: rampThenHold(scenario.vus ?? 10, 0.2),
      thinkTimeMs: scenario.thinkTime === undefined ? 0 : parseDurationMs(scenario.thinkTime, `scenario ${file}: thinkTime`),
      rate: scenario.rate ?? 10,
      accounts,
    },
    async setup (context) {
      return { accounts: context.accounts > 0 ? await context.registerAccounts(context.accounts, name) : [] }
    },
    async iteration (vu: VirtualUser, data) {
      const account = data.accounts[(vu.id + vu.iteration) % Math.max(1, data.accounts.length)]
      const variables = (variable: string): string => {
        switch (variable) {
          case 'account.email': return account?.email ?? ''
          case 'account.password': return account?.password ?? ''
          case 'unique': return vu.unique()
          case 'vu': return String(vu.id)
          case 'iteration': return String(vu.iteration)
          default: return String(vu.state[variable] ?? '')
        }
      }
      for (const step of steps) {
        const request: LabRequest = { method: step.method, path: String(substitute(step.path, variables)) }
        if (step.body !== undefined) request.body = substitute(step.body, variables)
        if (step.token !== undefined) request.token = String(substitute(step.token, variables))
        if (step.headers !== undefined) request.headers = substitute(step.headers, variables) as Record<string, string>
        const response = await vu.request(step.endpoint, request)
        if (!response.ok) return false
        for (const [variable, responsePath] of Object.entries(step.save)) vu.state[variable] = pluck(response.body, responsePath)
      }
      return true
    },
  }
}
