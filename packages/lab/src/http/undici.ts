/**
 * Sending with undici: a keep-alive Pool for requests without an owner, a Client of its own for
 * each owner, and each answer collected by a low-level dispatch handler.
 */
import { Client, Pool, type Dispatcher } from 'undici'
import { bodyText, classifyFailure, failedResponse, keepsBody, readingWishes, requestPayload, toLabResponse, type ReadingWishes } from './response.js'
import type { LabRequest, LabResponse, Transport } from './types.js'

/**
 * One response, collected by undici's low-level dispatch handler: the status, the headers the
 * lab reads (found in the raw header list, no header object built) and the body's chunks when it
 * is kept. `undici.request()` costs more per request for what the lab does not use: a Readable
 * body stream, an async resource, and every header parsed into an object (in `node --cpu-prof` of
 * a closed-loop crowd of cheap requests, one run each: 172.5 µs of generator thread per request
 * with it, 146.5 with this).
 */
class ResponseCollector implements Dispatcher.DispatchHandler {
  private status = 0
  private retryAfter: string | undefined
  private location: string | undefined
  private setCookies: string[] | undefined
  private readonly chunks: Buffer[] = []
  private contentType = ''
  private keepBody = false

  constructor (private readonly wishes: ReadingWishes, private readonly resolve: (response: LabResponse) => void) {}

  onConnect (): void {}

  onHeaders (statusCode: number, rawHeaders: Buffer[]): boolean {
    this.status = statusCode
    let contentType = ''
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i]
      const value = rawHeaders[i + 1]
      if (name === undefined || value === undefined) continue
      // Only names of the right length are decoded and compared.
      if (name.length === 12 && name.toString('latin1').toLowerCase() === 'content-type') contentType = value.toString('latin1')
      else if (name.length === 11 && name.toString('latin1').toLowerCase() === 'retry-after') this.retryAfter ??= value.toString('latin1')
      else if (name.length === 8 && name.toString('latin1').toLowerCase() === 'location') this.location ??= value.toString('latin1')
      else if (name.length === 10 && name.toString('latin1').toLowerCase() === 'set-cookie') (this.setCookies ??= []).push(value.toString('latin1'))
    }
    this.contentType = contentType
    this.keepBody = keepsBody(contentType, this.wishes.readText)
    return true
  }

  onData (chunk: Buffer): boolean {
    if (this.keepBody) this.chunks.push(chunk)
    return true
  }

  onComplete (): void {
    this.resolve(toLabResponse(this.status, this.contentType, { retryAfter: this.retryAfter, location: this.location, setCookies: this.setCookies }, this.keepBody ? bodyText(this.chunks) : undefined, this.wishes))
  }

  onError (err: Error): void {
    const error = err as { code?: string, message?: string }
    this.resolve(failedResponse(classifyFailure(err), error.code ?? error.message ?? String(err)))
  }
}

/** undici: a Pool for requests without an owner, a Client of its own for each owner. */
export class UndiciTransport implements Transport {
  private readonly pool: Pool
  private readonly clientOptions: Client.Options
  private readonly owned = new Map<number, Client>()

  constructor (private readonly url: string, connections: number, timeoutMs: number, private readonly localAddressOf: (owner: number) => string | undefined) {
    this.clientOptions = { pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: Math.min(timeoutMs, 10_000), keepAliveTimeout: 30_000 }
    this.pool = new Pool(url, { ...this.clientOptions, connections })
  }

  private dispatcher (owner: number | undefined): Dispatcher {
    if (owner === undefined) return this.pool
    let client = this.owned.get(owner)
    if (client === undefined) {
      const localAddress = this.localAddressOf(owner)
      this.owned.set(owner, client = new Client(this.url, localAddress === undefined ? this.clientOptions : { ...this.clientOptions, localAddress }))
    }
    return client
  }

  async send (request: LabRequest, owner?: number): Promise<LabResponse> {
    const headers: Record<string, string> = request.headers === undefined ? {} : { ...request.headers }
    const payload = requestPayload(request)
    if (payload !== undefined) headers['content-type'] = payload.contentType
    if (request.token !== undefined) headers.authorization = `Bearer ${request.token}`
    const options: Dispatcher.DispatchOptions = {
      method: request.method,
      path: request.path,
      headers,
      ...(payload === undefined ? {} : { body: payload.text }),
    }
    return await new Promise<LabResponse>((resolve) => {
      // dispatch() reports its own synchronous failures (a closed pool, bad options) to onError.
      this.dispatcher(owner).dispatch(options, new ResponseCollector(readingWishes(request), resolve))
    })
  }

  async close (): Promise<void> {
    await Promise.all([this.pool, ...this.owned.values()].map(async (dispatcher) => { await dispatcher.close() }))
  }

  async destroy (): Promise<void> {
    await Promise.all([this.pool, ...this.owned.values()].map(async (dispatcher) => { await dispatcher.destroy() }))
  }
}
