/**
 * The account page (GET /account), the pages a mail's link opens (GET /verify-email, GET
 * /reset-password: where TOLLBOOTH_PUBLIC_URL's links point when it names tollbooth itself) and
 * their scripts: HTML for a person to try the service, served outside the API's context like
 * /healthz (rendered once at start, so never shed). Only with TOLLBOOTH_ACCOUNT_PAGE (on by
 * default in development).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { readAccountPageScript, readMailLinkScript, renderAccountPage, renderResetPasswordPage, renderVerifyEmailPage, sendPage, sendScript, type AccountPageOptions } from '../pages/index.js'

export type AccountPageRoutesOptions = Pick<AccountPageOptions, 'secondFactor'>

const pagePath = '/account'
const scriptPath = '/account/account.js'
const mailLinkScriptPath = '/account/mail-link.js'

export const accountPageRoutes: FastifyPluginAsyncTypebox<AccountPageRoutesOptions> = async (app, options) => {
  const page = renderAccountPage({ scriptPath, secondFactor: options.secondFactor })
  const script = readAccountPageScript()

  app.get(pagePath, {
    schema: {
      tags: ['pages'],
      summary: 'The account page: register, sign in with a passkey or a password and a second factor, add a passkey, enrol TOTP (HTML)',
      description: 'Served with TOLLBOOTH_ACCOUNT_PAGE (on by default with the embedded database). Its script calls this API; docs/how-to/account-page.md lists the calls.',
      produces: ['text/html'],
      response: { 200: { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } } },
    },
  }, async (_request, reply) => await sendPage(reply, page))

  app.get(scriptPath, {
    schema: {
      tags: ['pages'],
      summary: 'The account page\'s script (JavaScript module)',
      produces: ['text/javascript'],
      response: { 200: { description: 'The script', content: { 'text/javascript': { schema: { type: 'string' } } } } },
    },
  }, async (_request, reply) => await sendScript(reply, script))

  const mailLinkScript = readMailLinkScript()
  const mailLinkPages = [
    { path: '/verify-email', markup: renderVerifyEmailPage({ scriptPath: mailLinkScriptPath, accountPath: pagePath }), summary: 'The page a verification mail\'s link opens: one button posts its token to POST /api/v1/auth/verify-email (HTML)' },
    { path: '/reset-password', markup: renderResetPasswordPage({ scriptPath: mailLinkScriptPath, accountPath: pagePath }), summary: 'The page a password-reset mail\'s link opens: a new password, posted with its token to POST /api/v1/auth/password/reset (HTML)' },
  ]
  for (const { path, markup, summary } of mailLinkPages) {
    app.get(path, {
      schema: {
        tags: ['pages'],
        summary,
        description: 'Served with TOLLBOOTH_ACCOUNT_PAGE. The token stays in the browser until the person presses the button: the page takes it out of the address bar, and its script posts it.',
        produces: ['text/html'],
        response: { 200: { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } } },
      },
    }, async (_request, reply) => await sendPage(reply, markup))
  }

  app.get(mailLinkScriptPath, {
    schema: {
      tags: ['pages'],
      summary: 'The mail-link pages\' script (JavaScript module)',
      produces: ['text/javascript'],
      response: { 200: { description: 'The script', content: { 'text/javascript': { schema: { type: 'string' } } } } },
    },
  }, async (_request, reply) => await sendScript(reply, mailLinkScript))
}
