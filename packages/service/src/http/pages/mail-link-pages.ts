/**
 * The pages a mail's link opens (GET /verify-email, GET /reset-password): the address confirmed,
 * or a new password set, with the link's token. Static markup, rendered once; their script
 * (mail-link.browser.js) reads the token from the address, takes it out of the address bar and
 * the history, and posts it to the API only when the person presses the button: a mail scanner
 * that opens the link spends nothing.
 */
import fs from 'node:fs'
import path from 'node:path'
import { passwordMinLength } from '../../accounts/index.js'
import { packageRoot } from '../../paths.js'
import { html, type SafeHtml } from './html.js'
import { renderPage } from './layout.js'

export interface MailLinkPageOptions {
  /** Where the pages' script is served. */
  scriptPath: string
  /** Where the account page is, to sign in afterwards; none: no link to it. */
  accountPath?: string | undefined
}

const missingToken = html`<p id="missing-token" hidden>This address carries no token: open the link of the mail again, whole.</p>`

function signInLink (accountPath: string | undefined): ReturnType<typeof html> {
  return accountPath === undefined ? html`` : html`<p id="sign-in-link" hidden><a href="${accountPath}">Sign in</a></p>`
}

const statusLine = html`<p id="status" class="status" role="status" aria-live="polite" aria-atomic="true"></p>`

/** A mail link's page: its heading, what the link lacks, the status line, its one form and the way to sign in after. */
function mailLinkPage (heading: string, form: SafeHtml, options: MailLinkPageOptions): string {
  return renderPage({
    title: `${heading} · tollbooth`,
    scripts: [options.scriptPath],
    main: html`<h1>${heading}</h1>
<noscript><p>This page needs JavaScript: it sends the link's token to the service from the browser.</p></noscript>
${missingToken}
${statusLine}
${form}
${signInLink(options.accountPath)}`,
  })
}

/** GET /verify-email?token=...: one button that confirms the address. */
export function renderVerifyEmailPage (options: MailLinkPageOptions): string {
  return mailLinkPage('Confirm your email address', html`<form id="verify-email" method="post" data-action="verify-email">
<p>Press the button to confirm that this address is yours.</p>
<button type="submit">Confirm my address</button>
</form>`, options)
}

/** GET /reset-password?token=...: a new password, typed twice. */
export function renderResetPasswordPage (options: MailLinkPageOptions): string {
  return mailLinkPage('Choose a new password', html`<form id="reset-password" method="post" data-action="reset-password">
<label for="new-password">New password</label>
<input id="new-password" name="password" type="password" autocomplete="new-password" minlength="${passwordMinLength}" aria-describedby="new-password-hint" required>
<p id="new-password-hint">At least ${passwordMinLength} characters; a common password is refused. Every session of the account ends.</p>
<label for="new-password-again">The same password again</label>
<input id="new-password-again" name="passwordAgain" type="password" autocomplete="new-password" required>
<button type="submit">Set the new password</button>
</form>`, options)
}

/** The pages' script, read once at start. */
export function readMailLinkScript (): string {
  return fs.readFileSync(path.join(packageRoot, 'src', 'http', 'pages', 'mail-link.browser.js'), 'utf8')
}
