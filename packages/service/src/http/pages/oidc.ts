/**
 * The OpenID Connect provider's pages: sign-in, second factor, consent, busy, errors, logout. One
 * script only, the sign-in page's passkey button (oidc-passkey.browser.js); without it the page
 * works as plain forms.
 */
import fs from 'node:fs'
import path from 'node:path'
import { packageRoot } from '../../paths.js'
import { html, SafeHtml, type HtmlValue } from './html.js'
import { renderPage } from './layout.js'

const scopeMeanings: Readonly<Record<string, string>> = {
  openid: 'Know who you are (your account id)',
  email: 'Your email address',
  profile: 'Your name',
  offline_access: 'Stay signed in when you are away',
}

function page (title: string, content: HtmlValue, scripts?: readonly string[]): string {
  return renderPage({ title, main: html`<h1>${title}</h1>\n${content}`, ...(scripts === undefined ? {} : { scripts }) })
}

/** The sign-in page's passkey: where its script is served, and where the assertion is posted. */
export interface PasskeySignIn {
  scriptPath: string
  action: string
}

/** A button the script shows where the browser has passkeys, and the form it posts the assertion with. */
function passkeySection (passkey: PasskeySignIn | undefined): HtmlValue {
  if (passkey === undefined) return undefined
  return html`<section id="passkey" aria-labelledby="passkey-heading">
<h2 id="passkey-heading">With a passkey</h2>
<p>No email needed: your browser offers the passkeys it holds for this site.</p>
<button type="button" id="passkey-sign-in" hidden>Use a passkey</button>
<p id="passkey-status" class="status" role="status" aria-live="polite"></p>
<form id="passkey-form" method="post" action="${passkey.action}"><input type="hidden" name="response"></form>
</section>
<h2>With your password</h2>
`
}

/** The passkey button's script, read once at start. */
export function readOidcPasskeyScript (): string {
  return fs.readFileSync(path.join(packageRoot, 'src', 'http', 'pages', 'oidc-passkey.browser.js'), 'utf8')
}

function errorLine (error: string | undefined): HtmlValue {
  return error === undefined ? undefined : html`<p class="status" data-kind="error" role="alert">${error}</p>\n`
}

/** The sign-in form, and the passkey button where `passkey` is given. */
export function signInPage (input: { action: string, clientName: string, email?: string, error?: string, passkey?: PasskeySignIn | undefined }): string {
  return page('Sign in', html`<p>to continue to <strong>${input.clientName}</strong></p>
${errorLine(input.error)}${passkeySection(input.passkey)}<form method="post" action="${input.action}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${input.email ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`, input.passkey === undefined ? undefined : [input.passkey.scriptPath])
}

export function secondFactorPage (input: { action: string, challenge: string, error?: string }): string {
  return page('Second step', html`<p>Your password was right. Finish signing in with a second factor.</p>
${errorLine(input.error)}<form method="post" action="${input.action}">
<input type="hidden" name="challenge" value="${input.challenge}">
<fieldset>
<legend>Finish with</legend>
<input type="radio" id="method-totp" name="method" value="totp" checked><label for="method-totp">a code from your authenticator app</label>
<input type="radio" id="method-recovery" name="method" value="recovery_code"><label for="method-recovery">a recovery code</label>
</fieldset>
<label for="code">Code</label>
<input id="code" name="code" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" required>
<button type="submit">Continue</button>
</form>`)
}

export function consentPage (input: { action: string, abortAction: string, clientName: string, scopes: string[] }): string {
  const items = input.scopes.map((scope) => html`<li>${scopeMeanings[scope] ?? scope}</li>\n`)
  return page('Allow access?', html`<p><strong>${input.clientName}</strong> asks to:</p>
<ul>
${items}</ul>
<form method="post" action="${input.action}"><button type="submit">Allow</button></form>
<form method="post" action="${input.abortAction}"><button type="submit">Deny</button></form>`)
}

export function busyPage (retryAfterSeconds: number): string {
  return page('Busy, please retry', html`<p>Many people are signing in right now. Please try again in ${retryAfterSeconds} s.</p>
<p>Nothing was lost: go back and send the form again.</p>`)
}

export function throttledPage (retryAfterSeconds: number): string {
  return page('Too many attempts', html`<p>Too many wrong attempts for this account. Please try again in ${retryAfterSeconds} s.</p>
<p>Go back and send the form again then.</p>`)
}

export function errorPage (input: { title: string, message: string }): string {
  return page(input.title, html`<p>${input.message}</p>`)
}

export function providerErrorPage (error: { code: string, description: string | undefined }): string {
  return page('Sign-in failed', html`<p>${error.description ?? 'The request could not be completed.'}</p>
<p>Error: <code>${error.code}</code></p>`)
}

/** `form`: oidc-provider's own hidden form (its action and xsrf value), markup it made. */
export function logoutConfirmPage (form: string, clientName: string | undefined): string {
  return page('Sign out?', html`${new SafeHtml(form)}
<p>Sign out${clientName === undefined ? '' : html` of <strong>${clientName}</strong>`} and end your tollbooth session?</p>
<button type="submit" form="op.logoutForm" name="logout" value="yes">Sign out</button>
<button type="submit" form="op.logoutForm">Stay signed in</button>`)
}

export function loggedOutPage (clientName: string | undefined): string {
  return page('Signed out', html`<p>You are signed out${clientName === undefined ? '' : html` of ${clientName}`}.</p>`)
}
