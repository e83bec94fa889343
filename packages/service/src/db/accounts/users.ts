import type { Queryable } from '../pool.js'

export interface User {
  id: string
  email: string
  name: string | null
  createdAt: Date
  /** When the owner opened the verification link (or reset the password by mail); null: not verified. */
  emailVerifiedAt: Date | null
}

export interface UserWithHash extends User {
  passwordHash: string | null
}

/** A users row as PostgreSQL returns it (`userColumns`). */
export interface UserRow {
  id: string
  email: string
  name: string | null
  password_hash: string | null
  created_at: Date
  email_verified_at: Date | null
}

/** The columns `toUser` reads, in the order of `UserRow`. */
export const userColumns = 'id, email, name, password_hash, created_at, email_verified_at'

export function toUser (row: UserRow): UserWithHash {
  return { id: row.id, email: row.email, name: row.name, passwordHash: row.password_hash, createdAt: row.created_at, emailVerifiedAt: row.email_verified_at }
}

/** Inserts a user; undefined when the (normalised) email is taken. */
export async function insertUser (db: Queryable, user: { email: string, name: string | null, passwordHash: string }): Promise<UserWithHash | undefined> {
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users (email, name, password_hash) VALUES ($1, $2, $3)
     ON CONFLICT (email) DO NOTHING RETURNING ${userColumns}`,
    [user.email, user.name, user.passwordHash])
  return rows[0] === undefined ? undefined : toUser(rows[0])
}

export async function findUserByEmail (db: Queryable, email: string): Promise<UserWithHash | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT ${userColumns} FROM users WHERE email = $1`, [email])
  return rows[0] === undefined ? undefined : toUser(rows[0])
}

export async function findUserById (db: Queryable, id: string): Promise<UserWithHash | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT ${userColumns} FROM users WHERE id = $1`, [id])
  return rows[0] === undefined ? undefined : toUser(rows[0])
}

/**
 * Locks the user row for a change of the account (NO KEY UPDATE: serialises reset, verification
 * and password change without blocking inserts that reference the user); the first lock, in
 * accounts.ts's order. False when the user is gone.
 */
export async function lockUserForChange (db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE', [id])
  return rows.length === 1
}

/** Holds the user row FOR KEY SHARE before any session lock, so a refresh keeps accounts.ts's order. False when the user is gone. */
export async function lockUserKeyShare (db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE', [id])
  return rows.length === 1
}

/** Replaces the hash only if it is still the one that was verified (a concurrent password change wins). */
export async function replacePasswordHash (db: Queryable, id: string, expectedHash: string | null, newHash: string): Promise<boolean> {
  const result = await db.query(
    'UPDATE users SET password_hash = $3, updated_at = now() WHERE id = $1 AND password_hash = $2',
    [id, expectedHash, newHash])
  return result.rowCount === 1
}

/** Sets a new hash (a password reset); true when the user exists. The address counts as verified: the reset link came by mail. */
export async function setPasswordHashByMail (db: Queryable, id: string, passwordHash: string): Promise<string | undefined> {
  const { rows } = await db.query<{ email: string }>(
    'UPDATE users SET password_hash = $2, updated_at = now(), email_verified_at = coalesce(email_verified_at, now()) WHERE id = $1 RETURNING email',
    [id, passwordHash])
  return rows[0]?.email
}

/** Marks the address verified (kept as it was when it already is). */
export async function markEmailVerified (db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE users SET email_verified_at = coalesce(email_verified_at, now()), updated_at = now() WHERE id = $1', [id])
}

export function publicUser (user: User): { id: string, email: string, name: string | null, createdAt: string, emailVerified: boolean } {
  return { id: user.id, email: user.email, name: user.name, createdAt: user.createdAt.toISOString(), emailVerified: user.emailVerifiedAt !== null }
}
