/**
 * A TCP proxy between the service and the test PostgreSQL, to cause real socket faults:
 * `stop()` is an outage (the listener closes and every connection is destroyed, so new ones are
 * refused), `start()` the database's return on the same port, and `freeze()` a network that
 * goes silent (connections stay open and are even accepted, but no byte gets through, nor the
 * end of a stream: a side that closes its half waits for an answer that does not come).
 */
import net from 'node:net'

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1 (the same across stop and start). */
  readonly port: number
  /** `url` with its host and port replaced by the proxy's. */
  proxied (url: string): string
  /** Connections open through the proxy now. */
  readonly connections: number
  /** Outage: stops listening and destroys every connection. */
  stop (): Promise<void>
  /** Return: listens again on the same port. */
  start (): Promise<void>
  /** Silence: bytes and stream ends in either direction are held, not forwarded, until `thaw()`. */
  freeze (): void
  thaw (): void
  close (): Promise<void>
}

interface Link {
  client: net.Socket
  upstream: net.Socket
  /** What a frozen link holds for each side; `null` is the end of the stream. */
  held: Array<{ to: net.Socket, chunk: Buffer | null }>
}

/** A proxy in front of the server of `databaseUrl` (its host and port). */
export async function startTcpProxy (databaseUrl: string): Promise<TcpProxy> {
  const target = new URL(databaseUrl)
  const links = new Set<Link>()
  let frozen = false
  let port = 0

  const deliver = (to: net.Socket, chunk: Buffer | null): void => {
    if (to.destroyed) return
    if (chunk === null) to.end()
    else to.write(chunk)
  }
  const forward = (link: Link, to: net.Socket, chunk: Buffer | null): void => {
    if (frozen) link.held.push({ to, chunk })
    else deliver(to, chunk)
  }

  // Half-open sockets: a side's end is forwarded like its bytes (and held like them when frozen).
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const upstream = net.connect({ port: Number(target.port), host: target.hostname, allowHalfOpen: true })
    const link: Link = { client, upstream, held: [] }
    links.add(link)
    const teardown = (): void => {
      links.delete(link)
      client.destroy()
      upstream.destroy()
    }
    client.on('data', (chunk: Buffer) => { forward(link, upstream, chunk) })
    upstream.on('data', (chunk: Buffer) => { forward(link, client, chunk) })
    client.on('end', () => { forward(link, upstream, null) })
    upstream.on('end', () => { forward(link, client, null) })
    for (const socket of [client, upstream]) {
      socket.on('error', teardown)
      socket.on('close', teardown)
    }
  })

  const listen = async (): Promise<void> => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject)
        port = (server.address() as net.AddressInfo).port
        resolve()
      })
    })
  }
  await listen()

  const stop = async (): Promise<void> => {
    if (!server.listening) return
    const closed = new Promise<void>((resolve) => { server.close(() => { resolve() }) })
    for (const link of [...links]) {
      link.client.destroy()
      link.upstream.destroy()
      links.delete(link)
    }
    await closed
  }

  return {
    get port () { return port },
    get connections () { return links.size },
    proxied (url: string) {
      const parsed = new URL(url)
      parsed.hostname = '127.0.0.1'
      parsed.port = String(port)
      // Over TCP through the proxy, not through the embedded database's Unix socket.
      parsed.searchParams.delete('host')
      return parsed.toString()
    },
    stop,
    start: listen,
    freeze () { frozen = true },
    thaw () {
      frozen = false
      for (const link of links) {
        for (const { to, chunk } of link.held.splice(0)) deliver(to, chunk)
      }
    },
    async close () {
      frozen = false
      await stop()
    },
  }
}
