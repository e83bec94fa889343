// Serves the single-page app on this machine: index.html, app.js, oauth4webapi's browser module
// (from node_modules: npm install oauth4webapi) and config.json made from the environment.
//   TOLLBOOTH_ISSUER   the provider's issuer (default http://127.0.0.1:3000/oidc)
//   CLIENT_ID          the public client registered for this page (without it: the command to register it)
//   PORT               default 5173; the page is http://127.0.0.1:PORT/, its own redirect URI
import fs from 'node:fs'
import http from 'node:http'
import { fileURLToPath } from 'node:url'

const issuer = new URL(process.env.TOLLBOOTH_ISSUER ?? 'http://127.0.0.1:3000/oidc')
const clientId = process.env.CLIENT_ID
const port = Number(process.env.PORT ?? 5173)
const redirectUri = `http://127.0.0.1:${port}/`

if (clientId === undefined || clientId === '') {
  console.error(`CLIENT_ID is not set. Register this page as a public client, then start again with its id:
  npx tollbooth clients add --name "Single-page app" --auth none --first-party \\
    --redirect-uri ${redirectUri} --post-logout-redirect-uri ${redirectUri}`)
  process.exit(2)
}

const here = (name) => fileURLToPath(new URL(name, import.meta.url))
const files = {
  '/': { path: here('index.html'), type: 'text/html; charset=utf-8' },
  '/app.js': { path: here('app.js'), type: 'text/javascript; charset=utf-8' },
  '/oauth4webapi.js': { path: fileURLToPath(import.meta.resolve('oauth4webapi')), type: 'text/javascript; charset=utf-8' },
}
const config = JSON.stringify({ issuer: issuer.href, clientId, redirectUri })
// The page loads only its own files and talks only to itself and the provider.
const contentSecurityPolicy = `default-src 'self'; connect-src 'self' ${issuer.origin}; base-uri 'none'; frame-ancestors 'none'`

const server = http.createServer((request, response) => {
  const { pathname } = new URL(request.url ?? '/', redirectUri)
  const headers = { 'content-security-policy': contentSecurityPolicy, 'cache-control': 'no-store' }
  if (pathname === '/config.json') {
    response.writeHead(200, { ...headers, 'content-type': 'application/json' }).end(config)
    return
  }
  const file = files[pathname]
  if (file === undefined) {
    response.writeHead(404, headers).end()
    return
  }
  response.writeHead(200, { ...headers, 'content-type': file.type })
  fs.createReadStream(file.path).pipe(response)
})

server.listen(port, '127.0.0.1', () => {
  console.log(`single-page app at ${redirectUri} (issuer ${issuer.href}, client ${clientId})`)
})
process.on('SIGTERM', () => { server.close(); server.closeAllConnections() })
