/** The mail room's public face: what the rest of the service uses of it. */
export { accountLink, passwordResetMail, registrationAttemptMail, verificationMail } from './messages.js'
export { MailDispatcher } from './dispatcher.js'
export { smtpTransport } from './transport.js'
