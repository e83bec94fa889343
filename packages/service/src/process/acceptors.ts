/**
 * More than one accepted connection per turn of the event loop. libuv 1.45 (Node 20) accepts ONE
 * connection per listening descriptor per turn (libuv PR 3696), so on a busy loop a crowd's new
 * connections wait in the kernel's accept queue for seconds (docs/explanation/overload.md).
 *
 * `count` descriptors for the same socket accept up to `count` per turn. Node 20 has neither
 * `dup()` nor `reusePort`, so the kernel makes the copies: the listening handle goes to a
 * short-lived child over IPC as a raw handle (it never listens on it) and comes back `count - 1`
 * times, each a new descriptor (SCM_RIGHTS). Each copy hands its connections to the HTTP server,
 * which serves them as its own, and the connection cap holds across all of them.
 */
import { spawn } from 'node:child_process'
import type http from 'node:http'
import net from 'node:net'

export interface Acceptors {
  /** Listening descriptors besides the server's own. */
  readonly extra: number
  /** Stops the copies accepting; the server's own listener is closed by the server. */
  close (): Promise<void>
}

/** The child: sends the raw handle back `copies` times and stays until the parent disconnects, so none is lost in its queue. */
const bounceScript = `
process.on('message', (copies, handle) => {
  for (let i = 0; i < copies; i++) process.send('copy', handle)
})
`

/** `copies` new descriptors for the listening socket behind `handle`, as raw handles. */
async function copiesOf (handle: unknown, copies: number, timeoutMs: number, execPath: string): Promise<unknown[]> {
  const child = spawn(execPath, ['-e', bounceScript], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env: { PATH: process.env.PATH ?? '' } })
  const received: unknown[] = []
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { reject(new Error(`no listening copies from the helper process within ${timeoutMs} ms`)) }, timeoutMs)
      child.on('message', (_message, copy) => {
        received.push(copy)
        if (received.length === copies) {
          clearTimeout(timer)
          resolve()
        }
      })
      child.once('error', (err) => { clearTimeout(timer); reject(err) })
      child.once('exit', (code) => {
        clearTimeout(timer)
        if (received.length < copies) reject(new Error(`the helper process exited (${String(code)}) after ${received.length} of ${copies} copies`))
      })
      // A raw handle (not the net.Server): the child gets it without listening on it.
      child.send(copies, handle as net.Server)
    })
    // Until it exits the child holds the socket too, and a closed service would still get connections queued.
    const exited = new Promise((resolve) => { child.once('exit', resolve) })
    child.disconnect()
    const killer = setTimeout(() => { child.kill('SIGKILL') }, timeoutMs)
    if (child.exitCode === null && child.signalCode === null) await exited
    clearTimeout(killer)
    return received
  } catch (err) {
    for (const copy of received) (copy as { close?: () => void }).close?.()
    child.kill()
    throw err
  }
}

export interface AcceptorOptions {
  /** The connection cap over all the descriptors (0: none). */
  maxConnections: number
  /** The listen backlog: each copy's listen() sets it again on the one socket. */
  backlog: number
  /** How long the helper process may take; default 10 s. */
  timeoutMs?: number
  /** The helper's executable; default this Node. */
  execPath?: string
  /** Told when no copies could be made: the server then accepts with its own descriptor only. */
  onWarning?: (message: string) => void
}

const none: Acceptors = { extra: 0, async close () {} }

/**
 * Adds `count - 1` listening copies of `server`'s socket that hand their connections to it; call
 * after `listen()`. The connection cap holds over all of them: the server's own listener gets what
 * the copies leave, and a copy closes a connection past the cap at once, as Node does.
 */
export async function addAcceptors (server: http.Server, count: number, options: AcceptorOptions): Promise<Acceptors> {
  const extra = Math.max(0, Math.floor(count) - 1)
  // The listening handle: what Node's cluster module also sends (not a public property).
  const listening = (server as unknown as { _handle?: unknown })._handle
  if (extra === 0 || listening === undefined || listening === null) return none
  let copies: unknown[]
  try {
    copies = await copiesOf(listening, extra, options.timeoutMs ?? 10_000, options.execPath ?? process.execPath)
  } catch (err) {
    options.onWarning?.(`accepting with one listening descriptor only (one new connection per turn of the event loop): ${err instanceof Error ? err.message : String(err)}`)
    return none
  }

  const max = options.maxConnections
  let open = 0
  let forwarded = 0
  // Every connection, the server's own and the copies', reaches the server's 'connection' event.
  server.on('connection', (socket: net.Socket) => {
    open++
    socket.once('close', () => { open-- })
  })
  // The server's own listener: what the copies' connections leave of the cap (never 0: that means none).
  const capOwn = (): void => { if (max > 0) server.maxConnections = Math.max(1, max - forwarded) }
  capOwn()

  const listeners = copies.map((copy) => {
    const listener = new net.Server()
    listener.on('connection', (socket: net.Socket) => {
      if (max > 0 && open >= max) {
        socket.destroy()
        return
      }
      forwarded++
      capOwn()
      socket.once('close', () => { forwarded--; capOwn() })
      server.emit('connection', socket)
    })
    listener.on('error', (err) => { server.emit('error', err) })
    // listen() on a copy calls listen(2) again on the one socket: with the server's backlog, not Node's 511.
    listener.listen(copy as net.Server, options.backlog)
    return listener
  })

  return {
    extra,
    async close () {
      // Not waited for: a copy's 'close' comes after its connections, which the server ends.
      for (const listener of listeners) listener.close()
    },
  }
}
