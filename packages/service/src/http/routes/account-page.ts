/**
 * The account page (GET /account) and its script: HTML for a person to try the service, served
 * outside the API's context like /healthz (rendered once at start, so never shed). Only with
 * TOLLBOOTH_ACCOUNT_PAGE (on by default in development).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { readAccountPageScript, renderAccountPage, sendPage, sendScript, type AccountPageOptions } from '../pages/index.js'

export type AccountPageRoutesOptions = Pick<AccountPageOptions, 'secondFactor'>

const pagePath = '/account'
const scriptPath = '/account/account.js'

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
}
