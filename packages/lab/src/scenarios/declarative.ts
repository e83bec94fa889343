/**
 * A scenario as a JSON file: steps run in order by each iteration, with
 * `{{...}}` placeholders and values saved from earlier responses. For anything
 * richer, write a JS module instead (see docs/guides/load-lab.md).
 *
 *   {
 *     "name": "me-after-login", "description": "...",
 *     "model": "closed", "vus": 20, "thinkTime": "500ms", "accounts": 10,
 *     "steps": [
 *       { "endpoint": "POST /auth/login", "method": "POST", "path": "/api/v1/auth/login",
 *         "body": { "email": "{{account.email}}", "password": "{{account.password}}" },
 *         "save": { "token": "accessToken" } },
 *       { "endpoint": "GET /me", "method": "GET", "path": "/api/v1/me", "token": "{{token}}" }
 *     ]
 *   }
 */
import { createError } from '../errors.js'
import type { LabRequest } from '../http.js'
import { rampThenHold, type Account, type Scenario, type VirtualUser } from '../scenario.js'
import { parseDurationMs } from '../schedule.js'

const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
const builtInVariables = ['account.email', 'account.password', 'unique', 'vu', 'iteration']
const placeholder = /\{\{\s*([\w.-]+)\s*\}\}/g

interface Step {
  endpoint: string
  method: LabRequest['method']
  path: string
  body?: unknown
  token?: string
  headers?: Record<string, string>
  /** variable -> dotted path into the JSON response body. */
  save: Record<string, string>
}

function invalid (file: string, message: string): never {
  throw createError('CONFIG_INVALID', `scenario ${file}: ${message}`)
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function placeholdersIn (value: unknown): string[] {
  if (typeof value === 'string') return [...value.matchAll(placeholder)].map((match) => match[1] ?? '')
  if (Array.isArray(value)) return value.flatMap(placeholdersIn)
  if (isRecord(value)) return Object.values(value).flatMap(placeholdersIn)
  return []
}

function substitute (value: unknown, variables: (name: string) => string): unknown {
  if (typeof value === 'string') {
    // A string that is exactly one placeholder keeps the variable's own text; others are templates.
    return value.replace(placeholder, (_match, name: string) => variables(name))
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, variables))
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, variables)]))
  return value
}

function pluck (body: unknown, dottedPath: string): unknown {
  let current = body
  for (const key of dottedPath.split('.')) {
    if (!isRecord(current) && !Array.isArray(current)) return undefined
    current = (current as Record<string, unknown>)[key]
  }
  return current
}

function parseStep (file: string, raw: unknown, index: number): Step {
  const at = `steps[${index}]`
  if (!isRecord(raw)) invalid(file, `${at} must be an object`)
  const known = ['endpoint', 'method', 'path', 'body', 'token', 'headers', 'save']
  for (const key of Object.keys(raw)) if (!known.includes(key)) invalid(file, `${at}.${key} is not a step field (${known.join(', ')})`)
  const { method, path, endpoint, token, headers, save } = raw
  if (typeof method !== 'string' || !(methods as readonly string[]).includes(method)) invalid(file, `${at}.method must be one of ${methods.join(', ')}`)
  if (typeof path !== 'string' || !path.startsWith('/')) invalid(file, `${at}.path must be a string starting with /`)
  if (endpoint !== undefined && (typeof endpoint !== 'string' || endpoint === '')) invalid(file, `${at}.endpoint must be a non-empty string`)
  if (token !== undefined && typeof token !== 'string') invalid(file, `${at}.token must be a string`)
  if (headers !== undefined && (!isRecord(headers) || Object.values(headers).some((v) => typeof v !== 'string'))) invalid(file, `${at}.headers must map names to strings`)
  if (save !== undefined && (!isRecord(save) || Object.values(save).some((v) => typeof v !== 'string'))) invalid(file, `${at}.save must map variable names to response paths`)
  return {
    endpoint: (endpoint as string | undefined) ?? `${method} ${path.replace(/^\/api\/v1/, '').split('?')[0] ?? path}`,
    method: method as LabRequest['method'],
    path,
    ...(raw.body === undefined ? {} : { body: raw.body }),
    ...(token === undefined ? {} : { token }),
    ...(headers === undefined ? {} : { headers: headers as Record<string, string> }),
    save: (save ?? {}) as Record<string, string>,
  }
}

function positiveNumber (file: string, value: unknown, field: string, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) invalid(file, `${field} must be a number >= 0`)
  return value
}

/** Validates a parsed JSON scenario (CONFIG_INVALID naming the field) and returns it as a Scenario. */
export function declarativeScenario (file: string, raw: unknown): Scenario<{ accounts: Account[] }> {
  if (!isRecord(raw)) invalid(file, 'must be a JSON object')
  const known = ['name', 'description', 'model', 'vus', 'rate', 'thinkTime', 'accounts', 'steps']
  for (const key of Object.keys(raw)) if (!known.includes(key)) invalid(file, `"${key}" is not a scenario field (${known.join(', ')})`)
  if (typeof raw.name !== 'string' || raw.name === '') invalid(file, 'name must be a non-empty string')
  if (!Array.isArray(raw.steps) || raw.steps.length === 0) invalid(file, 'steps must be a non-empty array')
  if (raw.model !== undefined && raw.model !== 'closed' && raw.model !== 'open') invalid(file, 'model must be "closed" or "open"')
  if (raw.thinkTime !== undefined && typeof raw.thinkTime !== 'string') invalid(file, 'thinkTime must be a duration string like "500ms"')
  const steps = raw.steps.map((step, index) => parseStep(file, step, index))
  const accounts = positiveNumber(file, raw.accounts, 'accounts', 0)
  const vus = positiveNumber(file, raw.vus, 'vus', 10)
  const rate = positiveNumber(file, raw.rate, 'rate', 10)

  const saved = new Set(steps.flatMap((step) => Object.keys(step.save)))
  for (const [index, step] of steps.entries()) {
    for (const name of placeholdersIn([step.path, step.body, step.token, step.headers])) {
      if (!builtInVariables.includes(name) && !saved.has(name)) {
        invalid(file, `steps[${index}] uses {{${name}}}, which is neither built in (${builtInVariables.join(', ')}) nor saved by a step`)
      }
      if (name.startsWith('account.') && accounts === 0) invalid(file, `steps[${index}] uses {{${name}}}: set "accounts" to register some in setup`)
    }
  }
  const name = raw.name

  return {
    name,
    description: typeof raw.description === 'string' ? raw.description : `Steps from ${file}`,
    endpoints: [...new Set(steps.map((step) => step.endpoint))],
    defaults: {
      model: raw.model === 'open' ? 'open' : 'closed',
      stages: rampThenHold(vus, 0.2),
      thinkTimeMs: raw.thinkTime === undefined ? 0 : parseDurationMs(raw.thinkTime, `scenario ${file}: thinkTime`),
      rate,
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
