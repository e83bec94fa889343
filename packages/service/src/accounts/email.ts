/** The one form of an email address that accounts are stored and found by. */

/**
 * Lower-cased: one account per address whatever its case. The schema admits ASCII only, which is
 * already NFC, so 001_init.sql's "trimmed, NFC, lower-cased" holds (the routes trim).
 */
export function normaliseEmail (email: string): string {
  return email.toLowerCase()
}
