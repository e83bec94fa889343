/**
 * The account mails, pure: (recipient, link) => message. Plain text only; the link opens a page
 * under TOLLBOOTH_PUBLIC_URL that posts the token to the API (POST /api/v1/auth/verify-email,
 * POST /api/v1/auth/password/reset). A message holds its link's place, not the link: the send
 * makes the token and fills the link in (dispatcher.ts), so no live link waits in the outbox.
 */
import type { MailLink, MailMessage } from '../db/index.js'

/** Where a text holds its link (db/migrations/006_mail_hardening.sql writes the same mark). */
const linkPlace = '{link}'

/** `<publicUrl>/<page>`, whatever the base's trailing slash or path; the send adds `?token=`. */
export function accountPage (publicUrl: string, page: 'verify-email' | 'reset-password'): string {
  const url = new URL(publicUrl)
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${page}`
  url.search = ''
  return url.toString()
}

/** The text as sent: its link's place filled with the page and the token. */
export function textWithLink (text: string, pageUrl: string, token: string): string {
  const url = new URL(pageUrl)
  url.searchParams.set('token', token)
  return text.split(linkPlace).join(url.toString())
}

function hours (seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`
  return `${Math.round(seconds / 60)} minutes`
}

type LinkedMail = MailMessage & { link: MailLink }

export function verificationMail (recipient: string, link: MailLink, ttlSeconds: number): LinkedMail {
  return {
    kind: 'verify_email',
    recipient,
    subject: 'Confirm your email address',
    text: `Open this link to confirm your email address:\n\n${linkPlace}\n\nIt works once, for ${hours(ttlSeconds)}. If you did not create an account, ignore this message.\n`,
    link,
  }
}

export function passwordResetMail (recipient: string, link: MailLink, ttlSeconds: number): LinkedMail {
  return {
    kind: 'password_reset',
    recipient,
    subject: 'Reset your password',
    text: `Someone (we hope you) asked to reset the password of the account with this address. Open this link to choose a new one:\n\n${linkPlace}\n\nIt works once, for ${hours(ttlSeconds)}, and signs out every session of the account. If you did not ask, ignore this message: your password stays as it is.\n`,
    link,
  }
}

/** To the owner of an account imported without a password: a reset link, their way to set one. */
export function importedAccountMail (recipient: string, link: MailLink, ttlSeconds: number): LinkedMail {
  return {
    kind: 'password_reset',
    recipient,
    subject: 'Choose a password for your account',
    text: `Your account has moved to a new sign-in service, without its password. Open this link to choose one:\n\n${linkPlace}\n\nIt works once, for ${hours(ttlSeconds)}; after that, ask for a password reset with this address. If you do not know this account, ignore this message.\n`,
    link,
  }
}

/** To the owner of an address someone tried to register again (enumeration-safe registration). */
export function registrationAttemptMail (recipient: string): MailMessage {
  return {
    kind: 'registration_attempt',
    recipient,
    subject: 'Someone tried to register with your address',
    text: 'Someone tried to create an account with this email address, which already has one. If it was you, sign in, or ask for a password reset if you have forgotten your password. If it was not you, you need do nothing: your account is unchanged.\n',
  }
}

/** To the owner of an account whose logins from unknown clients have started to wait (at most one an hour). */
export function loginsThrottledMail (recipient: string): MailMessage {
  return {
    kind: 'logins_throttled',
    recipient,
    subject: 'Repeated failed sign-ins to your account',
    text: 'Someone has entered wrong passwords for your account several times in a short while, so sign-ins to it from devices it does not know now wait a little before each try. Devices where you have signed in before are not slowed down. If it was you, wait a few minutes, or ask for a password reset. If it was not you, nobody got in; if your password is used anywhere else, change it. You get this mail at most once an hour.\n',
  }
}
