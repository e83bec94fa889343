/**
 * A real SMTP server for tests (the smtp-server package) on 127.0.0.1, offering no STARTTLS: it
 * keeps every message it receives, decoded enough to read the subject and the text
 * (quoted-printable or base64). And the same mailbox read from the debug log of services that
 * send no mail (TOLLBOOTH_MAIL_LOG_LINKS).
 */
import type { AddressInfo } from 'node:net'
import type pino from 'pino'
import { SMTPServer } from 'smtp-server'
import { capturingLogger } from './service.js'
import { waitFor } from './wait.js'

export interface ReceivedMail {
  to: string[]
  from: string
  subject: string
  text: string
}

interface Mailbox {
  readonly messages: ReceivedMail[]
  /** Waits for a message that `match` accepts and returns it. */
  waitForMail (what: string, match: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>
}

export interface TestSmtpServer extends Mailbox {
  url: string
  port: number
  /** The sender of every transaction begun (MAIL FROM), sent or not: a client that gave up before it sent nothing in clear. */
  mailFrom: string[]
  close (): Promise<void>
}

function waitForMailIn (messages: () => ReceivedMail[]): Mailbox['waitForMail'] {
  return async (what, match, timeoutMs = 10_000) => {
    await waitFor(what, () => messages().some(match), { timeoutMs })
    const found = messages().find(match)
    if (found === undefined) throw new Error(`no ${what}`)
    return found
  }
}

function header (head: string, name: string): string {
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ')
  const line = unfolded.split(/\r?\n/).find((candidate) => candidate.toLowerCase().startsWith(`${name.toLowerCase()}:`))
  return line === undefined ? '' : line.slice(name.length + 1).trim()
}

function decodeBody (body: string, encoding: string): string {
  if (encoding.toLowerCase() === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8')
  if (encoding.toLowerCase() === 'quoted-printable') {
    const bytes = body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    return Buffer.from(bytes, 'latin1').toString('utf8')
  }
  return body
}

function parseMail (raw: string, to: string[], from: string): ReceivedMail {
  const split = raw.search(/\r?\n\r?\n/)
  const head = split === -1 ? raw : raw.slice(0, split)
  const body = split === -1 ? '' : raw.slice(split).replace(/^\r?\n\r?\n/, '')
  return { to, from, subject: header(head, 'subject'), text: decodeBody(body, header(head, 'content-transfer-encoding')).replace(/\r\n/g, '\n') }
}

export interface SmtpServerOptions {
  /**
   * Called with each message once its data is in, before the server answers it: the message is
   * accepted (and kept) when the promise settles. A slow or stalled server for the tests.
   */
  beforeAccept?: (mail: ReceivedMail) => Promise<void>
}

/** Starts the server on `port` (0: any free one). */
export async function startSmtpServer (port = 0, options: SmtpServerOptions = {}): Promise<TestSmtpServer> {
  const messages: ReceivedMail[] = []
  const mailFrom: string[] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onMailFrom (address, _session, callback) {
      mailFrom.push(address.address)
      callback()
    },
    onData (stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => { chunks.push(chunk) })
      stream.on('end', () => {
        const to = session.envelope.rcptTo.map((address) => address.address)
        const from = session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address
        const mail = parseMail(Buffer.concat(chunks).toString('latin1'), to, from)
        void (options.beforeAccept?.(mail) ?? Promise.resolve()).finally(() => {
          messages.push(mail)
          callback()
        })
      })
    },
  })
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject)
    server.listen(port, '127.0.0.1', () => { resolve() })
  })
  const actualPort = (server.server.address() as AddressInfo).port
  return {
    url: `smtp://127.0.0.1:${actualPort}`,
    port: actualPort,
    messages,
    mailFrom,
    waitForMail: waitForMailIn(() => messages),
    async close () {
      await new Promise<void>((resolve) => { server.close(() => { resolve() }) })
    },
  }
}

/** The token of the first `<page>?token=...` link in the mail. */
export function linkToken (mail: ReceivedMail, page: 'verify-email' | 'reset-password'): string {
  const match = new RegExp(`/${page}\\?token=([A-Za-z0-9_-]+)`).exec(mail.text)
  if (match?.[1] === undefined) throw new Error(`no ${page} link in: ${mail.text}`)
  return match[1]
}

export interface LogMailbox extends Mailbox {
  /** For the services (startTestService's `logger`): it keeps every line, at debug level. */
  logger: pino.Logger
  lines: Array<Record<string, unknown>>
}

/** The mails services without SMTP write to their debug log, text and link included (TOLLBOOTH_MAIL_LOG_LINKS). */
export function logMailbox (): LogMailbox {
  const { logger, lines } = capturingLogger('debug')
  const messages = (): ReceivedMail[] => lines.flatMap((line) => {
    const mail = line.mail as { to?: string, subject?: string, text?: string } | undefined
    return line.level === 20 && mail?.text !== undefined ? [{ to: [mail.to ?? ''], from: '', subject: mail.subject ?? '', text: mail.text }] : []
  })
  return { logger, lines, get messages () { return messages() }, waitForMail: waitForMailIn(messages) }
}
