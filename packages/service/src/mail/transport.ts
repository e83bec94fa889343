/**
 * Where claimed mail goes: an SMTP server through nodemailer (TOLLBOOTH_SMTP_URL). One
 * transport per service; nodemailer opens a connection per message (no pool), so a server
 * that went away costs nothing between sends.
 */
import nodemailer from 'nodemailer'
import type { MailMessage } from '../db/index.js'

export interface MailTransport {
  /** The server for the log: scheme, host and port, never a user or password. */
  readonly server: string
  send (message: MailMessage): Promise<void>
  close (): void
}

export interface SmtpTransportOptions {
  /** smtp:// or smtps:// with optional user:password@ (a secret: never logged). */
  url: string
  from: string
  /** Bounds on one send, so a server that accepts and then hangs cannot outlast the claim's lease. */
  timeoutMs: number
}

export function smtpTransport ({ url, from, timeoutMs }: SmtpTransportOptions): MailTransport {
  const transporter = nodemailer.createTransport({
    url,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  } as Parameters<typeof nodemailer.createTransport>[0])
  return {
    server: smtpServerName(url),
    async send (message) {
      await transporter.sendMail({ from, to: message.recipient, subject: message.subject, text: message.text })
    },
    close () { transporter.close() },
  }
}

/** The server's host and port for the log (the URL itself may hold a password). */
function smtpServerName (url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}`
  } catch {
    return '(unparsable URL)'
  }
}
