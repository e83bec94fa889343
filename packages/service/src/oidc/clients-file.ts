/**
 * Clients as configuration: a JSON file lists the relying parties in OpenID Connect's metadata
 * names, and applying it makes the stored clients of the file what it says. Its clients are
 * added or updated, the ones it no longer lists removed; clients registered otherwise (`tollbooth
 * clients add`, dynamic registration) are never touched, and the file may not take their ids.
 * Every entry is checked (shape, secrets, oidc-provider's rules) before anything is written, and
 * the writes are one transaction under a lock, so replicas starting together apply it once and a
 * refused file changes nothing. A secret is given in the file, or only its SHA-256 (so the file
 * itself need not hold one); either way only the SHA-256 is stored.
 */
import fs from 'node:fs'
import { isDeepStrictEqual } from 'node:util'
import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type pg from 'pg'
import { createError } from '../errors.js'
import { deleteOidcClient, insertOidcClient, listOidcClients, lockOidcClients, updateFileOidcClient, withTransaction, type NewOidcClient } from '../db/index.js'
import { clientSecretHash, firstPartyMember } from './client-metadata.js'
import { clientAuthMethods, clientToStore, metadataFault, needsSecret, registrationFault } from './clients.js'

const FileClientSchema = Type.Object({
  client_id: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$' }),
  client_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  redirect_uris: Type.Array(Type.String({ minLength: 1, maxLength: 2000 }), { minItems: 1, maxItems: 50 }),
  post_logout_redirect_uris: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 2000 }), { maxItems: 50 })),
  token_endpoint_auth_method: Type.Optional(Type.Union(clientAuthMethods.map((method) => Type.Literal(method)))),
  /** At least 32 characters: a secret guessed no faster than a generated one is worth hashing with SHA-256 alone. */
  client_secret: Type.Optional(Type.String({ minLength: 32, maxLength: 512 })),
  client_secret_sha256: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
  jwks: Type.Optional(Type.Object({ keys: Type.Array(Type.Object({}, { additionalProperties: true }), { minItems: 1 }) })),
  [firstPartyMember]: Type.Optional(Type.Boolean()),
}, { additionalProperties: false })
type FileClient = Static<typeof FileClientSchema>

const ClientsFile = Type.Object({ clients: Type.Array(FileClientSchema, { maxItems: 10_000 }) }, { additionalProperties: false })
const clientsFileShape = TypeCompiler.Compile(ClientsFile)

/** What applying a file did (or, with dryRun, would do), by client id. */
export interface ClientsFileReport {
  added: string[]
  updated: string[]
  removed: string[]
  unchanged: string[]
}

function refuse (file: string, message: string): never {
  throw createError('CONFIG_INVALID', `clients file ${file}: ${message}`, { field: 'TOLLBOOTH_OIDC_CLIENTS_FILE' })
}

function readClientsFile (file: string): FileClient[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch (err) {
    refuse(file, (err as Error).message)
  }
  const fault = clientsFileShape.Errors(parsed).First()
  if (fault !== undefined) refuse(file, `${fault.path === '' ? 'the file' : fault.path} ${fault.message} (expected {"clients": [{"client_id", "redirect_uris", ...}]}; see docs/how-to/openid-connect.md)`)
  return (parsed as Static<typeof ClientsFile>).clients
}

/** One entry as the row it stands for, or why it cannot be one. */
function entryToStore (entry: FileClient): NewOidcClient | string {
  const authMethod = entry.token_endpoint_auth_method ?? 'client_secret_basic'
  const registration = {
    clientId: entry.client_id,
    name: entry.client_name,
    redirectUris: entry.redirect_uris,
    postLogoutRedirectUris: entry.post_logout_redirect_uris ?? [],
    authMethod,
    jwks: entry.jwks,
    firstParty: entry[firstPartyMember] ?? false,
  }
  const fault = registrationFault(registration)
  if (fault !== undefined) return fault
  const given = [entry.client_secret, entry.client_secret_sha256].filter((value) => value !== undefined).length
  if (needsSecret(authMethod) && given !== 1) return `${authMethod} needs exactly one of client_secret and client_secret_sha256`
  if (!needsSecret(authMethod) && given !== 0) return `${authMethod} takes no secret`
  const secretHash = entry.client_secret !== undefined
    ? clientSecretHash(entry.client_secret)
    : entry.client_secret_sha256 !== undefined ? Buffer.from(entry.client_secret_sha256, 'hex') : null
  return clientToStore(registration, secretHash, 'file')
}

/** The file's clients checked and turned into rows; the first fault refuses the whole file. */
async function checkedClients (db: pg.Pool, file: string): Promise<NewOidcClient[]> {
  const wanted: NewOidcClient[] = []
  const seen = new Set<string>()
  for (const [index, entry] of readClientsFile(file).entries()) {
    if (seen.has(entry.client_id)) refuse(file, `client "${entry.client_id}" is listed twice`)
    seen.add(entry.client_id)
    const stored = entryToStore(entry)
    if (typeof stored === 'string') refuse(file, `client "${entry.client_id}" (entry ${index + 1}): ${stored}`)
    wanted.push(stored)
  }
  const refused = await metadataFault(db, wanted)
  if (refused !== undefined) refuse(file, `client "${refused.clientId}": its metadata is refused: ${refused.message}`)
  return wanted
}

class DryRun extends Error {
  constructor (readonly report: ClientsFileReport) { super('dry run') }
}

/** Applies the file (see the module's comment); `dryRun`: reports what would change and changes nothing. */
export async function applyClientsFile (db: pg.Pool, file: string, options: { dryRun?: boolean } = {}): Promise<ClientsFileReport> {
  const wanted = await checkedClients(db, file)
  try {
    return await withTransaction(db, async (tx) => {
      await lockOidcClients(tx)
      const stored = new Map((await listOidcClients(tx)).map((client) => [client.clientId, client]))
      const report: ClientsFileReport = { added: [], updated: [], removed: [], unchanged: [] }
      for (const client of wanted) {
        const current = stored.get(client.clientId)
        if (current === undefined) {
          await insertOidcClient(tx, client)
          report.added.push(client.clientId)
        } else if (current.source !== 'file') {
          refuse(file, `client "${client.clientId}" was registered ${current.source === 'cli' ? 'with `tollbooth clients add`' : 'by dynamic registration'}; remove it (tollbooth clients remove) or give the file's client another id`)
        } else if (isDeepStrictEqual(current.metadata, client.metadata) && current.firstParty === client.firstParty && isDeepStrictEqual(current.secretHash, client.secretHash)) {
          report.unchanged.push(client.clientId)
        } else {
          await updateFileOidcClient(tx, client)
          report.updated.push(client.clientId)
        }
      }
      const listed = new Set(wanted.map((client) => client.clientId))
      for (const current of stored.values()) {
        if (current.source === 'file' && !listed.has(current.clientId)) {
          await deleteOidcClient(tx, current.clientId)
          report.removed.push(current.clientId)
        }
      }
      if (options.dryRun === true) throw new DryRun(report)
      return report
    })
  } catch (err) {
    if (err instanceof DryRun) return err.report
    throw err
  }
}
