/**
 * Passkeys (WebAuthn credentials) and the challenges of their ceremonies (009_passkeys.sql; the
 * challenges unlogged, 013). A challenge is spent by the statement that reads it, so two replicas
 * can never both accept it.
 */
import type { Queryable } from '../pool.js'
import type { User } from './users.js'

export interface StoredPasskey {
  id: string
  credentialId: Buffer
  userId: string
  publicKey: Buffer
  signCount: number
  transports: string[]
  backupEligible: boolean
  backedUp: boolean
  aaguid: string
  name: string
  createdAt: Date
  lastUsedAt: Date | null
}

interface Row {
  id: string
  credential_id: Buffer
  user_id: string
  public_key: Buffer
  sign_count: string
  transports: string[]
  backup_eligible: boolean
  backed_up: boolean
  aaguid: string
  name: string
  created_at: Date
  last_used_at: Date | null
}

const columns = 'id, credential_id, user_id, public_key, sign_count, transports, backup_eligible, backed_up, aaguid, name, created_at, last_used_at'

function toPasskey (row: Row): StoredPasskey {
  return {
    id: row.id,
    credentialId: row.credential_id,
    userId: row.user_id,
    publicKey: row.public_key,
    signCount: Number(row.sign_count),
    transports: row.transports,
    backupEligible: row.backup_eligible,
    backedUp: row.backed_up,
    aaguid: row.aaguid,
    name: row.name,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  }
}

export type NewPasskey = Omit<StoredPasskey, 'id' | 'createdAt' | 'lastUsedAt'>

/** Stores a verified credential; undefined when its credential id is already registered (to anyone). */
export async function insertPasskey (db: Queryable, passkey: NewPasskey): Promise<StoredPasskey | undefined> {
  const { rows } = await db.query<Row>(
    `INSERT INTO passkeys (credential_id, user_id, public_key, sign_count, transports, backup_eligible, backed_up, aaguid, name)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (credential_id) DO NOTHING RETURNING ${columns}`,
    [passkey.credentialId, passkey.userId, passkey.publicKey, passkey.signCount, passkey.transports, passkey.backupEligible, passkey.backedUp, passkey.aaguid, passkey.name])
  return rows[0] === undefined ? undefined : toPasskey(rows[0])
}

/** What an assertion's one statement finds: the challenge it spent, the credential and the credential's account. */
export interface AssertionLookup {
  /** The live challenge of `purpose` now spent, with the account it was issued for (null: any); undefined when none was. */
  challenge: { userId: string | null } | undefined
  passkey: StoredPasskey | undefined
  /** The passkey's account (read in the same snapshot: a passkey never outlives its user). */
  user: User | undefined
}

/** A passkeys row's columns, null when no credential matched (the statement's LEFT JOIN). */
type MaybeRow = { [Column in keyof Row]: Row[Column] | null }

interface AssertionRow extends MaybeRow {
  challenge_spent: boolean
  challenge_user_id: string | null
  user_email: string | null
  user_name: string | null
  user_created_at: Date | null
  user_email_verified_at: Date | null
}

/** Built once: every passkey sign-in runs it. */
const spendAndFindStatement = `WITH spent AS (
    DELETE FROM passkey_challenges WHERE challenge_hash = $1 AND purpose = $2 AND expires_at > now() RETURNING user_id
  )
  SELECT EXISTS (SELECT 1 FROM spent) AS challenge_spent, (SELECT user_id FROM spent) AS challenge_user_id,
         ${columns.split(', ').map((column) => `p.${column}`).join(', ')},
         u.email AS user_email, u.name AS user_name, u.created_at AS user_created_at, u.email_verified_at AS user_email_verified_at
    FROM (VALUES (0)) AS one
    LEFT JOIN passkeys p ON p.credential_id = $3
    LEFT JOIN users u ON u.id = p.user_id`

/**
 * Spends the challenge and reads the credential with its account in one statement (one round trip
 * instead of three). The challenge is spent whatever else is found: an assertion spends its
 * challenge whether it is then answered or refused.
 */
export async function spendChallengeAndFindPasskey (db: Queryable, hash: Buffer, purpose: PasskeyChallengePurpose, credentialId: Buffer): Promise<AssertionLookup> {
  const { rows } = await db.query<AssertionRow>(spendAndFindStatement, [hash, purpose, credentialId])
  const row = rows[0] as AssertionRow
  const passkey = row.id === null ? undefined : toPasskey(row as Row)
  return {
    challenge: row.challenge_spent ? { userId: row.challenge_user_id } : undefined,
    passkey,
    user: passkey === undefined || row.user_email === null || row.user_created_at === null
      ? undefined
      : { id: passkey.userId, email: row.user_email, name: row.user_name, createdAt: row.user_created_at, emailVerifiedAt: row.user_email_verified_at },
  }
}

/** The user's passkeys, oldest first. */
export async function listPasskeys (db: Queryable, userId: string): Promise<StoredPasskey[]> {
  const { rows } = await db.query<Row>(`SELECT ${columns} FROM passkeys WHERE user_id = $1 ORDER BY created_at, id`, [userId])
  return rows.map(toPasskey)
}

/** Renames one of the user's passkeys; false when it is not theirs or unknown. */
export async function renamePasskey (db: Queryable, userId: string, id: string, name: string): Promise<boolean> {
  const result = await db.query('UPDATE passkeys SET name = $3 WHERE id = $2 AND user_id = $1', [userId, id, name])
  return result.rowCount === 1
}

/**
 * Deletes one of the user's passkeys unless it is the account's last way to sign in (no password
 * and no other passkey). Locks the user row first (accounts.ts's order), so two deletions of an
 * account's last two passkeys serialise and the second sees the first.
 */
export async function deletePasskeyUnlessLast (db: Queryable, userId: string, id: string): Promise<'deleted' | 'not_found' | 'last_sign_in_method'> {
  const { rows } = await db.query<{ has_password: boolean, others: string, found: boolean }>(
    `SELECT u.password_hash IS NOT NULL AS has_password,
            (SELECT count(*) FROM passkeys p WHERE p.user_id = u.id AND p.id <> $2) AS others,
            EXISTS (SELECT 1 FROM passkeys p WHERE p.user_id = u.id AND p.id = $2) AS found
       FROM users u WHERE u.id = $1 FOR NO KEY UPDATE OF u`,
    [userId, id])
  const row = rows[0]
  if (row === undefined || !row.found) return 'not_found'
  if (!row.has_password && Number(row.others) === 0) return 'last_sign_in_method'
  await db.query('DELETE FROM passkeys WHERE id = $2 AND user_id = $1', [userId, id])
  return 'deleted'
}

/**
 * Records a sign-in with the passkey: its new counter and backup state. The counter only moves
 * forward (0 stays 0 for an authenticator that keeps none): of two assertions carrying the same
 * counter, only one is accepted. False when the stored counter is already at or past `signCount`.
 */
export async function recordPasskeyUse (db: Queryable, id: string, use: { signCount: number, backedUp: boolean }): Promise<boolean> {
  const result = await db.query(
    `UPDATE passkeys SET sign_count = $2, backed_up = $3, last_used_at = now()
      WHERE id = $1 AND (sign_count < $2 OR (sign_count = 0 AND $2 = 0))`,
    [id, use.signCount, use.backedUp])
  return result.rowCount === 1
}

export type PasskeyChallengePurpose = 'register' | 'authenticate'

export async function insertPasskeyChallenge (db: Queryable, challenge: { hash: Buffer, purpose: PasskeyChallengePurpose, userId: string | null, expiresAt: Date }): Promise<void> {
  await db.query('INSERT INTO passkey_challenges (challenge_hash, purpose, user_id, expires_at) VALUES ($1, $2, $3, $4)',
    [challenge.hash, challenge.purpose, challenge.userId, challenge.expiresAt])
}

/**
 * Spends a live challenge of `purpose` in one statement; undefined when it is unknown, spent,
 * expired or of another purpose. `userId`: the account it was issued for (null: any account).
 */
export async function spendPasskeyChallenge (db: Queryable, hash: Buffer, purpose: PasskeyChallengePurpose): Promise<{ userId: string | null } | undefined> {
  const { rows } = await db.query<{ user_id: string | null }>(
    'DELETE FROM passkey_challenges WHERE challenge_hash = $1 AND purpose = $2 AND expires_at > now() RETURNING user_id',
    [hash, purpose])
  return rows[0] === undefined ? undefined : { userId: rows[0].user_id }
}
