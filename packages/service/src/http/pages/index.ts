/** The http/pages room's face: the pages tollbooth serves itself, and the layout and HTML helpers they share. */
export { escapeHtml, html } from './html.js'
export { providerPagePolicy, renderPage, sendPage, sendScript } from './layout.js'
export { readAccountPageScript, renderAccountPage, type AccountPageOptions } from './account-page.js'
export { readMailLinkScript, renderResetPasswordPage, renderVerifyEmailPage } from './mail-link-pages.js'
export { busyPage, consentPage, errorPage, loggedOutPage, logoutConfirmPage, providerErrorPage, readOidcPasskeyScript, secondFactorPage, signInPage, throttledPage, type PasskeySignIn } from './oidc.js'
