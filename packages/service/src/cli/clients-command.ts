/**
 * `tollbooth clients add | apply | list | remove`: the relying parties of the OpenID Connect provider
 * (TOLLBOOTH_OIDC), kept in PostgreSQL and shared by every replica. A client's secret is printed
 * once, at `add`; only its SHA-256 is stored. Settings from the environment, as `tollbooth keys`.
 * Exit codes: 0 done, 1 refused or failed (an unknown client, the database), 2 a usage or configuration fault.
 */
import fs from 'node:fs'
import { parseArgs } from 'node:util'
import { loadConfig, type Config } from '../config/index.js'
import { isTollboothError } from '../errors.js'
import { CommandRefusal, withCommandPool } from './command-database.js'
import { addClient, applyClientsFile, clientAuthMethods, listClients, removeClient, type ClientAuthMethod, type ClientsFileReport } from '../oidc/index.js'

const clientsUsage = `Usage:
  tollbooth clients add --redirect-uri URI [--redirect-uri URI ...] [--id ID] [--name NAME]
                        [--auth client_secret_basic|client_secret_post|private_key_jwt|none] [--jwks-file FILE]
                        [--post-logout-redirect-uri URI ...] [--first-party] [--json]
      register a relying party; its secret (client_secret_basic, the default, and client_secret_post)
      is printed once. --auth none: a public client (single-page or native app), PKCE its only proof.
      --first-party: its users are not asked for consent.
  tollbooth clients apply FILE [--dry-run] [--json]
      make the clients of a clients file ({"clients": [...]}, as TOLLBOOTH_OIDC_CLIENTS_FILE) what
      it lists: its clients added or updated, those it no longer lists removed; clients added with
      \`clients add\` or by dynamic registration are left alone. --dry-run: say what would change.
  tollbooth clients list [--json]       the registered clients (never a secret) and where each came from
  tollbooth clients remove ID           remove a client: its tokens stop working at once

Settings from the environment, as the service's: DATABASE_URL; without it, the embedded PostgreSQL
of the service running from TOLLBOOTH_DATA_DIR. See docs/reference/cli.md.
`

type Write = (text: string) => void

export interface ClientsCommandOptions {
  env?: NodeJS.ProcessEnv
  writeOut?: Write
  writeError?: Write
}

const optionSpec = {
  'redirect-uri': { type: 'string', multiple: true },
  'post-logout-redirect-uri': { type: 'string', multiple: true },
  id: { type: 'string' },
  name: { type: 'string' },
  auth: { type: 'string' },
  'jwks-file': { type: 'string' },
  'first-party': { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
} as const

function parseCommand (argv: string[]): ReturnType<typeof parseArgs<{ options: typeof optionSpec, allowPositionals: true, strict: true }>> {
  try {
    return parseArgs({ args: argv, options: optionSpec, strict: true, allowPositionals: true })
  } catch (err) {
    throw new CommandRefusal(`${(err as Error).message}\n\n${clientsUsage}`, 2)
  }
}

function authMethod (value: string | undefined): ClientAuthMethod {
  if (value === undefined) return 'client_secret_basic'
  if (!(clientAuthMethods as readonly string[]).includes(value)) throw new CommandRefusal(`--auth must be one of ${clientAuthMethods.join(', ')}`, 2)
  return value as ClientAuthMethod
}

function readJwks (file: string | undefined): { keys: unknown[] } | undefined {
  if (file === undefined) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch (err) {
    throw new CommandRefusal(`cannot read the JWK Set ${file}: ${(err as Error).message}`, 2)
  }
  if (typeof parsed !== 'object' || parsed === null || !Array.isArray((parsed as { keys?: unknown }).keys)) throw new CommandRefusal(`${file} is not a JWK Set ({ "keys": [...] })`, 2)
  return parsed as { keys: unknown[] }
}

function describeApplied (report: ClientsFileReport, dryRun: boolean): string {
  const lines = (['added', 'updated', 'removed'] as const).filter((what) => report[what].length > 0).map((what) => `${dryRun ? `would be ${what}` : what}: ${report[what].join(' ')}`)
  return [...lines, `unchanged: ${report.unchanged.length}`].join('\n') + '\n'
}

async function run (parsed: ReturnType<typeof parseCommand>, config: Config, out: Write): Promise<number> {
  const [action, id, ...extra] = parsed.positionals
  const values = parsed.values
  const json = values.json === true
  if (action !== 'add' && action !== 'apply' && action !== 'list' && action !== 'remove') throw new CommandRefusal(`${action === undefined ? 'name a command' : `unknown command "${action}"`}\n\n${clientsUsage}`, 2)
  const takesArgument = action === 'remove' || action === 'apply'
  if (takesArgument && id === undefined) throw new CommandRefusal(`${action} needs the ${action === 'apply' ? 'clients file' : 'client id'}\n\n${clientsUsage}`, 2)
  if ((!takesArgument && id !== undefined) || extra.length > 0) throw new CommandRefusal(`unexpected argument "${String(takesArgument ? extra[0] : id)}"\n\n${clientsUsage}`, 2)
  if (action !== 'apply' && values['dry-run'] === true) throw new CommandRefusal(`--dry-run goes with apply\n\n${clientsUsage}`, 2)
  const registration = action === 'add'
    ? {
        clientId: values.id,
        name: values.name,
        redirectUris: values['redirect-uri'] ?? [],
        postLogoutRedirectUris: values['post-logout-redirect-uri'] ?? [],
        authMethod: authMethod(values.auth),
        jwks: readJwks(values['jwks-file']),
        firstParty: values['first-party'] === true,
      }
    : undefined
  return await withCommandPool(config, async (pool) => {
    if (registration !== undefined) {
      const added = await addClient(pool, registration)
      if (json) out(`${JSON.stringify({ clientId: added.clientId, clientSecret: added.secret ?? null })}\n`)
      else out(`client_id: ${added.clientId}\n${added.secret === undefined ? 'no secret (' + registration.authMethod + ')' : `client_secret: ${added.secret}\n(shown this once: only its SHA-256 is kept)`}\n`)
      return 0
    }
    if (action === 'apply') {
      const report = await applyClientsFile(pool, id ?? '', { dryRun: values['dry-run'] === true })
      out(json ? `${JSON.stringify({ dryRun: values['dry-run'] === true, ...report })}\n` : describeApplied(report, values['dry-run'] === true))
      return 0
    }
    if (action === 'list') {
      const clients = await listClients(pool)
      const listed = clients.map((client) => ({ clientId: client.clientId, firstParty: client.firstParty, source: client.source, createdAt: client.createdAt.toISOString(), ...client.metadata }))
      if (json) out(`${JSON.stringify({ clients: listed })}\n`)
      else out(clients.length === 0 ? 'no client registered\n' : clients.map((client) => `${client.clientId}  ${client.source}  ${String(client.metadata.token_endpoint_auth_method)}${client.firstParty ? '  first-party' : ''}  ${(client.metadata.redirect_uris as string[]).join(' ')}`).join('\n') + '\n')
      return 0
    }
    if (!await removeClient(pool, id ?? '')) throw new CommandRefusal(`no client has the id "${id ?? ''}"`, 1)
    out(json ? `${JSON.stringify({ removed: id })}\n` : `removed client ${id ?? ''}\n`)
    return 0
  })
}

export async function runClientsCommand (argv: string[], options: ClientsCommandOptions = {}): Promise<number> {
  const out = options.writeOut ?? ((text) => { process.stdout.write(text) })
  const error = options.writeError ?? ((text) => { process.stderr.write(text) })
  try {
    if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
      out(clientsUsage)
      return 0
    }
    const parsed = parseCommand(argv)
    const config = loadConfig({ env: options.env ?? process.env })
    return await run(parsed, config, out)
  } catch (err) {
    if (err instanceof CommandRefusal) {
      error(`tollbooth clients: ${err.message}\n`)
      return err.exitCode
    }
    if (isTollboothError(err, 'CONFIG_INVALID')) {
      error(`tollbooth clients: ${err.message}\n`)
      return 2
    }
    throw err
  }
}
