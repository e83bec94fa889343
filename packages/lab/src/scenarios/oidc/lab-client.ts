/**
 * The lab's own relying party, registered as an operator registers one: `tollbooth clients add`
 * on the service's database, a first-party confidential client (client_secret_basic) whose users
 * are not asked for consent. Removed first when a client of that id exists (an earlier run on the
 * same database), since its secret was shown once and is gone.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { tollboothBin } from 'tollbooth/launcher'
import type { LabOidcClient } from '../scenario.js'

const run = promisify(execFile)

/** Never visited: the walk stops at the redirect to it and reads the code from its query. */
const labRedirectUri = 'http://127.0.0.1/tollbooth-lab/callback'

async function clients (env: Record<string, string>, args: string[]): Promise<{ exitCode: number, stdout: string, stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [tollboothBin, 'clients', ...args], { env: { ...process.env, ...env }, timeout: 60_000 })
    return { exitCode: 0, stdout, stderr }
  } catch (err) {
    const failed = err as { code?: unknown, stdout?: string, stderr?: string, message: string }
    return { exitCode: typeof failed.code === 'number' ? failed.code : -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? failed.message }
  }
}

/** Registers the lab's client `tollbooth-lab-<label>` afresh with `tollbooth clients` run with `env` (its database); its id, secret and redirect URI. */
export async function registerLabOidcClient (env: Record<string, string>, label: string): Promise<LabOidcClient> {
  const clientId = `tollbooth-lab-${label}`
  // Exit 1 is "no such client": nothing to remove.
  const removed = await clients(env, ['remove', clientId])
  if (removed.exitCode !== 0 && removed.exitCode !== 1) throw new Error(`setup: tollbooth clients remove ${clientId} failed (exit ${removed.exitCode}): ${removed.stderr.trim()}`)
  const added = await clients(env, ['add', '--id', clientId, '--name', `tollbooth lab (${label})`, '--redirect-uri', labRedirectUri, '--first-party', '--json'])
  if (added.exitCode !== 0) throw new Error(`setup: tollbooth clients add ${clientId} failed (exit ${added.exitCode}): ${added.stderr.trim()}`)
  const { clientSecret } = JSON.parse(added.stdout) as { clientSecret: string | null }
  if (clientSecret === null) throw new Error(`setup: tollbooth clients add ${clientId} gave no secret`)
  return { clientId, clientSecret, redirectUri: labRedirectUri }
}
