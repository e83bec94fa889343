/** The mail room's public face: what the rest of the service uses of it. */
export { accountPage, importedAccountMail, loginsThrottledMail, passwordResetMail, registrationAttemptMail, verificationMail } from './messages.js'
export { hashLinkToken, newLinkToken, tokenStandIn } from './link-token.js'
export { mailboxKey } from './mailbox.js'
export { MailDispatcher } from './dispatcher.js'
export { smtpTransport } from './transport.js'
