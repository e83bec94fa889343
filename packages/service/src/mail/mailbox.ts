/**
 * The mailbox an address reaches, as the mail bounds count it: lowercase, the local part without
 * its +tag and its dots, so `A.B+news@x.com`, `ab+1@x.com` and `ab@x.com` are one mailbox
 * `ab@x.com`. Dots are dropped for every domain, not only for providers known to ignore them: a
 * bound counted too widely only makes two mailboxes share a bound far above what one person asks
 * for, while one counted too narrowly multiplies the mail one mailbox can be sent (2^(n-1) dotted
 * spellings of an n-letter name). The key only counts; mail still goes to the address as typed.
 */
export function mailboxKey (email: string): string {
  const lower = email.toLowerCase()
  const at = lower.lastIndexOf('@')
  if (at <= 0) return lower
  const local = lower.slice(0, at)
  const folded = (local.split('+')[0] ?? '').replaceAll('.', '')
  return `${folded.length === 0 ? local : folded}${lower.slice(at)}`
}
