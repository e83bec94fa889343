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

/** How long the empty server may take to listen. */
const startTimeoutMs = 10_000

export async function startReferenceServer (): Promise<ReferenceServer> {
  // Its own process group: a Ctrl-C that interrupts the run does not kill it before the lab
  // has stopped probing (the lab closes it then, or it exits when the lab's end of stdin closes).
  const child = spawn(process.execPath, ['-e', serverCode], { stdio: ['pipe', 'pipe', 'inherit'], detached: true })
  // Writing to a child that just died must not take the lab down (EPIPE).
  child.stdin.on('error', () => {})
  const exited = once(child, 'exit')
  let timer: NodeJS.Timeout | undefined
  try {
    const port = await Promise.race([
      once(child.stdout, 'data').then(([chunk]) => Number(String(chunk).trim())),
      exited.then(([code]) => { throw new Error(`the empty reference server for /healthz exited (code ${String(code)}) before it listened`) }),
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => { reject(new Error(`the empty reference server for /healthz did not listen within ${startTimeoutMs / 1000} s`)) }, startTimeoutMs)
      }),
    ])
    return {
      url: `http://127.0.0.1:${port}`,
      close: async () => {
        if (child.exitCode !== null || child.signalCode !== null) return
        child.stdin.end()
        await exited
      },
    }
  } catch (err) {
    child.kill('SIGKILL')
    throw err
  } finally {
    clearTimeout(timer)
  }
}
