/**
 * The lab's own HTTP/1.1 client (src/http/raw-*.ts) against scripted servers on loopback: answers
 * framed every way HTTP/1.1 allows, keep-alive and its end, answers it cannot trust, what it
 * writes and refuses to write, its pool's bound and its destruction.
 */
import assert from 'node:assert/strict'
import { EventEmitter, once } from 'node:events'
import net from 'node:net'
import { after, before, describe, it } from 'node:test'
import { HttpTarget } from '../../src/http/index.js'

/** One request's head as the scripted server read it. */
interface SeenRequest { line: string, headers: Record<string, string>, headerLines: string[], body: string, connection: number, remoteAddress: string | undefined }

interface ScriptedServer {
  url: string
  seen: SeenRequest[]
  connections: () => number
  /** Resolves once the server has read `count` requests in all. */
  requestsRead: (count: number) => Promise<void>
  /** Resolves once the server's side of connection `connection` has closed: both ends are done with it. */
  connectionClosed: (connection: number) => Promise<void>
  close: () => Promise<void>
}

/**
 * A server that reads each request (head, then a body by Content-Length) and answers with what
 * `script` writes on the socket, by the request's path.
 */
async function scriptedServer (script: (path: string, socket: net.Socket, seen: SeenRequest) => void): Promise<ScriptedServer> {
  const seen: SeenRequest[] = []
  const sockets = new Set<net.Socket>()
  const closed = new Set<number>()
  const events = new EventEmitter()
  let connections = 0
  const server = net.createServer((socket) => {
    const connection = ++connections
    sockets.add(socket)
    socket.on('close', () => {
      sockets.delete(socket)
      closed.add(connection)
      events.emit('closed')
    })
    socket.on('error', () => {})
    let buffer = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      buffer += chunk
      while (true) {
        const end = buffer.indexOf('\r\n\r\n')
        if (end === -1) return
        const [line = '', ...headerLines] = buffer.slice(0, end).split('\r\n')
        const headers: Record<string, string> = {}
        for (const header of headerLines) {
          const colon = header.indexOf(':')
          headers[header.slice(0, colon).toLowerCase()] = header.slice(colon + 1).trim()
        }
        const length = Number(headers['content-length'] ?? '0')
        if (buffer.length < end + 4 + length) return
        const request = { line, headers, headerLines, body: buffer.slice(end + 4, end + 4 + length), connection, remoteAddress: socket.remoteAddress }
        buffer = buffer.slice(end + 4 + length)
        seen.push(request)
        events.emit('read')
        script(line.split(' ')[1] ?? '', socket, request)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    connections: () => connections,
    requestsRead: async (count) => { while (seen.length < count) await once(events, 'read') },
    connectionClosed: async (connection) => { while (!closed.has(connection)) await once(events, 'closed') },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

const json = (status: number, body: unknown, extra = ''): string => {
  const text = JSON.stringify(body)
  return `HTTP/1.1 ${status} X\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${extra}\r\n${text}`
}

describe('the raw client: framing and keep-alive', () => {
  let server: ScriptedServer
  before(async () => {
    server = await scriptedServer((path, socket) => {
      switch (path) {
        case '/length':
          socket.write(json(200, { framed: 'by length', n: 'wörld' }))
          break
        case '/chunked':
          // Chunks split across writes, a chunk extension and a trailer.
          socket.write('HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n7;ext=1\r\n{"parts')
          setTimeout(() => { socket.write('\r\n8\r\n":[1,2]}\r') }, 10)
          setTimeout(() => { socket.write('\n0\r\nx-trailer: yes\r\n\r\n') }, 20)
          break
        case '/no-content':
          socket.write('HTTP/1.1 204 No Content\r\nRetry-After: 2\r\n\r\n')
          break
        case '/early-hints':
          socket.write('HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n')
          setTimeout(() => { socket.write(json(401, { error: { code: 'AUTH_TOKEN_INVALID' } })) }, 10)
          break
        case '/close-says':
          socket.end(json(200, { closing: true }, 'connection: close\r\n'))
          break
        case '/close-silently':
          socket.write(json(200, { closing: 'silently' }))
          setTimeout(() => socket.end(), 10)
          break
        case '/http10':
          socket.end('HTTP/1.0 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 4\r\n\r\n{"to":"the end"}')
          break
        case '/empty':
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n')
          break
      }
    })
  })
  after(async () => { await server.close() })

  it('reads a length, chunks, 204, and 103 then 401, all on one keep-alive connection', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    const before = server.connections()
    assert.deepEqual(await target.send({ method: 'GET', path: '/length' }), { status: 200, failure: null, ok: true, body: { framed: 'by length', n: 'wörld' }, retryAfterSeconds: null, detail: null })
    const chunked = await target.send({ method: 'GET', path: '/chunked' })
    assert.deepEqual([chunked.status, chunked.body], [201, { parts: [1, 2] }])
    const noContent = await target.send({ method: 'GET', path: '/no-content' })
    assert.deepEqual([noContent.status, noContent.ok, noContent.retryAfterSeconds], [204, true, 2])
    const afterHints = await target.send({ method: 'GET', path: '/early-hints' })
    assert.deepEqual([afterHints.status, afterHints.ok, afterHints.body], [401, false, { error: { code: 'AUTH_TOKEN_INVALID' } }])
    const empty = await target.send({ method: 'GET', path: '/empty' })
    assert.deepEqual([empty.status, empty.ok, empty.body], [200, true, undefined])
    await target.close()
    assert.equal(server.connections() - before, 1)
  })

  it('opens a new connection after the server closed one, saying so or not', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    const before = server.connections()
    assert.deepEqual((await target.send({ method: 'GET', path: '/close-says' })).body, { closing: true })
    assert.deepEqual((await target.send({ method: 'GET', path: '/close-silently' })).body, { closing: 'silently' })
    // The client has seen that end before the next request: a new connection, not a resend.
    await server.connectionClosed(server.seen.at(-1)?.connection ?? 0)
    assert.deepEqual((await target.send({ method: 'GET', path: '/length' })).status, 200)
    await target.close()
    assert.equal(server.connections() - before, 3)
  })

  it('reads an HTTP/1.0 answer without a length to the connection\'s end', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    assert.deepEqual(await target.send({ method: 'GET', path: '/http10' }), { status: 503, failure: null, ok: false, body: { to: 'the end' }, retryAfterSeconds: 4, detail: null })
    assert.equal((await target.send({ method: 'GET', path: '/length' })).status, 200)
    await target.close()
  })
})

describe('the raw client: answers it cannot trust', () => {
  let server: ScriptedServer
  before(async () => {
    server = await scriptedServer((path, socket) => {
      switch (path) {
        case '/garbage':
          socket.write('HELLO THERE\r\n\r\n')
          break
        case '/two-lengths':
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok')
          break
        case '/bad-chunk':
          socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n')
          break
        case '/reset':
          socket.write('HTTP/1.1 200 OK\r\ncontent-le')
          setTimeout(() => socket.resetAndDestroy(), 10)
          break
        case '/twice':
          socket.write(json(200, { answer: 'first' }) + json(200, { answer: 'stale' }))
          break
        case '/fresh':
          socket.write(json(200, { answer: 'fresh' }))
          break
      }
    })
  })
  after(async () => { await server.close() })

  for (const [path, detail] of [['/garbage', /status line/], ['/two-lengths', /two content-lengths/], ['/bad-chunk', /chunk size/]] as const) {
    it(`counts ${path} as a failure of its own kind, then carries on`, async () => {
      const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
      const response = await target.send({ method: 'GET', path })
      assert.equal(response.status, null)
      assert.equal(response.failure, 'other')
      assert.match(response.detail ?? '', detail)
      assert.deepEqual((await target.send({ method: 'GET', path: '/fresh' })).body, { answer: 'fresh' })
      await target.close()
    })
  }

  it('counts a connection reset in the middle of an answer as a connection failure', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    const response = await target.send({ method: 'GET', path: '/reset' })
    await target.close()
    assert.equal(response.failure, 'connection', JSON.stringify(response))
    assert.equal(response.status, null)
  })

  it('drops a connection that sent bytes past its answer: the next answer is the next request\'s', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    const before = server.connections()
    assert.deepEqual((await target.send({ method: 'GET', path: '/twice' })).body, { answer: 'first' })
    assert.deepEqual((await target.send({ method: 'GET', path: '/fresh' })).body, { answer: 'fresh' })
    await target.close()
    assert.equal(server.connections() - before, 2)
  })
})

describe('the raw client: what it writes', () => {
  let server: ScriptedServer
  before(async () => {
    server = await scriptedServer((_path, socket) => { socket.write('HTTP/1.1 204 No Content\r\n\r\n') })
  })
  after(async () => { await server.close() })

  it('writes the host, the token, a JSON body with its length, a POST without a body with length 0', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    await target.send({ method: 'POST', path: '/login?x=1', token: 'abc', body: { email: 'ö@example.com' }, headers: { 'X-Lab': 'yes', 'content-type': 'text/plain' } })
    await target.send({ method: 'POST', path: '/logout' })
    await target.send({ method: 'GET', path: '/me' })
    await target.close()
    const [login, logout, me] = server.seen.slice(-3)
    assert.equal(login?.line, 'POST /login?x=1 HTTP/1.1')
    assert.equal(login?.headers.host, new URL(server.url).host)
    assert.equal(login?.headers.authorization, 'Bearer abc')
    assert.equal(login?.headers['content-type'], 'application/json')
    assert.equal(login?.headers['x-lab'], 'yes')
    assert.equal(Buffer.from(login?.body ?? '', 'latin1').toString('utf8'), '{"email":"ö@example.com"}')
    // Each once: the scenario's own content-type gave way to the JSON body's.
    assert.deepEqual(login?.headerLines.filter((header) => /^(content-type|authorization):/i.test(header)), ['authorization: Bearer abc', 'content-type: application/json'])
    assert.equal(logout?.headers['content-length'], '0')
    assert.equal(me?.headers['content-length'], undefined)
  })

  it('refuses a header or a path it could not write as given, and writes nothing', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    const before = server.seen.length
    const refused = [
      await target.send({ method: 'GET', path: '/me', headers: { 'x-evil': 'a\r\nx-injected: 1' } }),
      await target.send({ method: 'GET', path: '/me', headers: { 'bad name': 'x' } }),
      await target.send({ method: 'GET', path: '/me', headers: { Host: 'elsewhere' } }),
      await target.send({ method: 'GET', path: '/a b' }),
      await target.send({ method: 'GET', path: 'http://elsewhere/' }),
      await target.send({ method: 'GET', path: '/me', token: 'a\nb' }),
      await target.send({ method: 'GET /x HTTP/1.1\r\nx:' as 'GET', path: '/me' }),
    ]
    await target.close()
    for (const response of refused) {
      assert.equal(response.failure, 'other', JSON.stringify(response))
      assert.equal(response.status, null)
    }
    assert.equal(server.seen.length, before)
  })
})

describe('the raw client: its pool, its owners, its end', () => {
  let server: ScriptedServer
  before(async () => {
    server = await scriptedServer((path, socket) => {
      if (path === '/never') return
      setTimeout(() => { socket.write(json(200, { ok: true })) }, 30)
    })
  })
  after(async () => { await server.close() })

  it('never opens more pool connections than it was given: the rest wait for one', async () => {
    const target = new HttpTarget(server.url, { connections: 2, timeoutMs: 5_000, client: 'raw' })
    const before = server.connections()
    const responses = await Promise.all(Array.from({ length: 5 }, async () => await target.send({ method: 'GET', path: '/slow' })))
    await target.close()
    assert.deepEqual(responses.map((response) => response.status), [200, 200, 200, 200, 200])
    assert.equal(server.connections() - before, 2)
  })

  it('sends an owner\'s requests on its own connection, from its source address', { skip: process.platform !== 'linux' && 'loopback source addresses need Linux' }, async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw', sourceAddresses: ['127.1.0.1', '127.1.0.2'] })
    await target.send({ method: 'GET', path: '/owner' }, 3)
    await target.send({ method: 'GET', path: '/owner' }, 3)
    await target.send({ method: 'GET', path: '/owner' }, 4)
    await target.close()
    const [first, second, third] = server.seen.slice(-3)
    assert.equal(first?.remoteAddress, '127.1.0.2')
    assert.equal(second?.connection, first?.connection)
    assert.equal(third?.remoteAddress, '127.1.0.1')
    assert.notEqual(third?.connection, first?.connection)
  })

  it('destroy fails a request under way at once, and one waiting for a connection, as connection failures', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 60_000, client: 'raw' })
    const before = server.seen.length
    const underWay = target.send({ method: 'GET', path: '/never' })
    const waiting = target.send({ method: 'GET', path: '/never' })
    // The first is at the server; the second waits for the pool's one connection.
    await server.requestsRead(before + 1)
    const started = performance.now()
    await target.destroy()
    const [first, second] = await Promise.all([underWay, waiting])
    assert.ok(performance.now() - started < 5_000)
    assert.equal(first.failure, 'connection')
    assert.equal(second.failure, 'connection')
    assert.equal((await target.send({ method: 'GET', path: '/slow' })).failure, 'connection')
  })
})

describe('the raw client: a connection the server ends', () => {
  let server: ScriptedServer
  before(async () => {
    server = await scriptedServer((path, socket, seen) => {
      switch (path) {
        case '/hint':
          socket.write(json(200, { hint: 1 }, 'keep-alive: timeout=1\r\n'))
          break
        case '/second-closes':
          // The second request on a connection finds it closing, as an idle one the server ends.
          if (server.seen.filter((request) => request.connection === seen.connection).length === 2) socket.destroy()
          else socket.write(json(200, { on: seen.connection }))
          break
        case '/first-closes':
          socket.destroy()
          break
        case '/slow':
          setTimeout(() => { socket.write(json(200, { slow: seen.connection })) }, 20)
          break
      }
    })
  })
  after(async () => { await server.close() })

  it('does not reuse a connection past the server\'s Keep-Alive timeout, less a margin', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    const before = server.connections()
    for (let k = 0; k < 3; k++) assert.equal((await target.send({ method: 'GET', path: '/hint' })).status, 200)
    await target.close()
    assert.equal(server.connections() - before, 3)
  })

  it('writes a request again, once, on a new connection when a reused one closes before any answer', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    const before = server.connections()
    const first = await target.send({ method: 'POST', path: '/second-closes', body: { n: 1 } })
    const second = await target.send({ method: 'POST', path: '/second-closes', body: { n: 2 } })
    await target.close()
    assert.equal(first.status, 200)
    assert.equal(second.status, 200, JSON.stringify(second))
    assert.notDeepEqual(second.body, first.body)
    assert.equal(server.connections() - before, 2)
  })

  it('does not write again a request whose new connection closed: a connection failure', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    const before = server.seen.length
    const response = await target.send({ method: 'GET', path: '/first-closes' })
    await target.close()
    assert.equal(response.failure, 'connection', JSON.stringify(response))
    assert.equal(server.seen.length - before, 1)
  })

  it('gives an owner\'s waiting request a connection of its own after the one before it timed out', { timeout: 10_000 }, async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 300, client: 'raw' })
    const [first, second] = await Promise.all([1, 2].map(async () => await target.send({ method: 'GET', path: '/silent' }, 9)))
    await target.close()
    assert.equal(first?.failure, 'timeout', JSON.stringify(first))
    assert.equal(second?.failure, 'timeout', JSON.stringify(second))
  })

  it('writes an owner\'s requests sent at once in turn, on its one connection', async () => {
    const target = new HttpTarget(server.url, { connections: 1, timeoutMs: 5_000, client: 'raw' })
    const before = server.connections()
    const responses = await Promise.all([1, 2, 3].map(async () => await target.send({ method: 'GET', path: '/slow' }, 7)))
    await target.close()
    assert.deepEqual(responses.map((response) => response.status), [200, 200, 200])
    assert.equal(server.connections() - before, 1)
  })
})
