/**
 * An empty HTTP server in a process of its own, answering every request as tollbooth's
 * /healthz does (`{"status":"ok"}`), with nothing else to do: the floor under a service's
 * /healthz figures. Probed beside the service in the same run (probe.ts), it shows what the
 * machine itself adds at that moment (CPU taken by the load generator, PostgreSQL, hash
 * threads, a neighbour), so what is left is the service's own.
 *
 * It runs at the lab's nice value, as a service the lab starts does, and exits when its
 * stdin closes, so a lab that dies does not leave it behind.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'

const serverCode = `
const server = require('node:http').createServer((request, response) => {
  response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
  response.end('{"status":"ok"}')
})
server.keepAliveTimeout = 60000
server.listen(0, '127.0.0.1', () => { process.stdout.write(server.address().port + '\\n') })
process.stdin.on('end', () => { process.exit(0) }).resume()
`

export interface ReferenceServer {
  url: string
  close: () => Promise<void>
}

export async function startReferenceServer (): Promise<ReferenceServer> {
  const child = spawn(process.execPath, ['-e', serverCode], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  const port = await Promise.race([
    once(child.stdout, 'data').then(([chunk]) => Number(String(chunk).trim())),
    exited.then(([code]) => { throw new Error(`the empty reference server for /healthz exited (code ${String(code)}) before it listened`) }),
  ])
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.stdin.end()
      await exited
    },
  }
}
