/**
 * The account mails, pure: (recipient, link) => message. Plain text only; the link carries the
 * token as `?token=...` under TOLLBOOTH_PUBLIC_URL, where the application's page posts it to
 * the API (POST /api/v1/auth/verify-email, POST /api/v1/auth/password/reset).
 */
import type { MailMessage } from '../db/index.js'

/** `<publicUrl>/<page>?token=<token>`, whatever the base's trailing slash or path. */
export function accountLink (publicUrl: string, page: 'verify-email' | 'reset-password', token: string): string {
  const url = new URL(publicUrl)
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${page}`
  url.search = ''
  url.searchParams.set('token', token)
  return url.toString()
}

function hours (seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`
  return `${Math.round(seconds / 60)} minutes`
}

export function verificationMail (recipient: string, link: string, ttlSeconds: number): MailMessage {
  return {
    kind: 'verify_email',
    recipient,
    subject: 'Confirm your email address',
    text: `Open this link to confirm your email address:\n\n${link}\n\nIt works once, for ${hours(ttlSeconds)}. If you did not create an account, ignore this message.\n`,
  }
}

export function passwordResetMail (recipient: string, link: string, ttlSeconds: number): MailMessage {
  return {
    kind: 'password_reset',
    recipient,
    subject: 'Reset your password',
    text: `Someone (we hope you) asked to reset the password of the account with this address. Open this link to choose a new one:\n\n${link}\n\nIt works once, for ${hours(ttlSeconds)}, and signs out every session of the account. If you did not ask, ignore this message: your password stays as it is.\n`,
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
