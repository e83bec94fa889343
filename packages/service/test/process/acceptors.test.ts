/**
 * addAcceptors (src/process/acceptors.ts): copies of the listening descriptor let a crowd of new
 * connections in while the event loop is busy, keep the connection cap over all of them, stop
 * with the server, and fall back to the server's own descriptor when no copy can be made.
 * Real sockets, a real helper process; turns of the loop are counted, not timed.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { addAcceptors, type Acceptors } from '../../src/process/acceptors.js'

async function listen (server: http.Server, backlog = 1024): Promise<number> {
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0, backlog }, resolve))
  return (server.address() as AddressInfo).port
}

async function close (server: http.Server, acceptors: Acceptors): Promise<void> {
  await acceptors.close()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
}

/** Blocks the loop for `ms` once per turn, and counts the turns. */
function busyTurns (ms: number): { turns: () => number, stop: () => void } {
  let turns = 0
  const timer = setInterval(() => {
    turns++
    const until = performance.now() + ms
    while (performance.now() < until) { /* a turn of a saturated loop */ }
  }, 0)
  return { turns: () => turns, stop: () => { clearInterval(timer) } }
}

/** Opens `count` connections at once, each sending one request; resolves with the loop turns it took until every answer came. */
async function crowd (port: number, count: number): Promise<number> {
  const busy = busyTurns(10)
  try {
    await Promise.all(Array.from({ length: count }, async () => {
      await new Promise<void>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () => { socket.write('GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n') })
        socket.once('data', () => { socket.destroy(); resolve() })
        socket.once('error', reject)
      })
    }))
    return busy.turns()
  } finally {
    busy.stop()
  }
}

describe('listening copies (addAcceptors)', () => {
  it('accept a crowd of new connections in a few turns of a busy loop, where one descriptor takes a turn each', async (t) => {
    const connections = 96
    const turnsWith = async (count: number): Promise<number> => {
      const server = http.createServer((_request, response) => { response.end('ok') })
      const port = await listen(server)
      const acceptors = await addAcceptors(server, count, { maxConnections: 0, backlog: 1024 })
      assert.equal(acceptors.extra, count - 1)
      try {
        return await crowd(port, connections)
      } finally {
        await close(server, acceptors)
      }
    }
    const one = await turnsWith(1)
    const sixteen = await turnsWith(16)
    t.diagnostic(`${connections} new connections: ${one} turns of the loop with one descriptor, ${sixteen} with 16`)
    // One descriptor: about one turn per connection (libuv 1.45+); 16: about 96 / 16 = 6.
    assert.ok(sixteen <= connections / 4, `16 descriptors took ${sixteen} turns for ${connections} connections`)
    assert.ok(sixteen * 3 <= one, `16 descriptors took ${sixteen} turns, one took ${one}`)
  })

  it('keep the connection cap over every descriptor: past it, a new connection is closed at once', async () => {
    const server = http.createServer(() => { /* never answers: connections stay open */ })
    const port = await listen(server)
    const acceptors = await addAcceptors(server, 4, { maxConnections: 5, backlog: 128 })
    let open = 0
    let most = 0
    server.on('connection', (socket: net.Socket) => {
      open++
      most = Math.max(most, open)
      socket.once('close', () => { open-- })
    })
    const sockets: net.Socket[] = []
    try {
      const outcomes = await Promise.all(Array.from({ length: 12 }, async () => {
        return await new Promise<'closed' | 'kept'>((resolve) => {
          const socket = net.connect(port, '127.0.0.1')
          sockets.push(socket)
          socket.on('error', () => {})
          socket.once('close', () => { resolve('closed') })
          // Held open by the server a while: it was let in.
          setTimeout(() => { resolve('kept') }, 1500)
        })
      }))
      assert.equal(outcomes.filter((outcome) => outcome === 'kept').length, 5, JSON.stringify(outcomes))
      assert.ok(most <= 5, `the server held ${most} connections at once`)
    } finally {
      for (const socket of sockets) socket.destroy()
      await close(server, acceptors)
    }
  })

  it('stop accepting when closed: no descriptor is left listening', async () => {
    const server = http.createServer((_request, response) => { response.end('ok') })
    const port = await listen(server)
    const acceptors = await addAcceptors(server, 8, { maxConnections: 0, backlog: 128 })
    await close(server, acceptors)
    const refused = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => { socket.destroy(); resolve('connected') })
      socket.once('error', (err: NodeJS.ErrnoException) => { resolve(err.code ?? err.message) })
    })
    assert.equal(refused, 'ECONNREFUSED')
  })

  it('fall back to the server\'s own descriptor, with a warning, when the helper process cannot run', async () => {
    const server = http.createServer((_request, response) => { response.end('ok') })
    const port = await listen(server)
    const warnings: string[] = []
    const acceptors = await addAcceptors(server, 8, { maxConnections: 0, backlog: 128, execPath: '/nonexistent/node', onWarning: (message) => { warnings.push(message) } })
    try {
      assert.equal(acceptors.extra, 0)
      assert.match(warnings.join('\n'), /one listening descriptor only/)
      const response = await fetch(`http://127.0.0.1:${port}/`)
      assert.equal(await response.text(), 'ok')
    } finally {
      await close(server, acceptors)
    }
  })
})
