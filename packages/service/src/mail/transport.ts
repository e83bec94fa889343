/**
 * Where claimed mail goes: an SMTP server through nodemailer (TOLLBOOTH_SMTP_URL). One
 * transport per service; nodemailer opens a connection per message (no pool), so a server
 * that went away costs nothing between sends.
 *
 * Never in clear by default: smtps:// is TLS from the first byte, and smtp:// must upgrade with
 * STARTTLS (nodemailer's requireTLS) or the message is not sent and the send fails, to be
 * retried as any failed send. Opportunistic STARTTLS would let anyone on the path strip the
 * server's offer and read the links. Only a loopback server may be spoken to in clear, when
 * TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK says so (development and tests; load.ts checks it).
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
  /** smtp:// without STARTTLS when the server offers none; the URL's host is loopback (checked at load). Default false. */
  allowPlaintextLoopback?: boolean
}

export function smtpTransport ({ url, from, timeoutMs, allowPlaintextLoopback = false }: SmtpTransportOptions): MailTransport {
  const parsed = new URL(url)
  const secure = parsed.protocol === 'smtps:'
  // The URL's parts, not the URL: nodemailer would take options from its query (`?ignoreTLS=true`) over these.
  const transporter = nodemailer.createTransport({
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    ...(parsed.port === '' ? {} : { port: Number(parsed.port) }),
    secure,
    requireTLS: !secure && !allowPlaintextLoopback,
    ...(parsed.username === '' ? {} : { auth: { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } }),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  })
  return {
    server: `${parsed.protocol}//${parsed.host}`,
    async send (message) {
      await transporter.sendMail({ from, to: message.recipient, subject: message.subject, text: message.text })
    },
    close () { transporter.close() },
  }
}
