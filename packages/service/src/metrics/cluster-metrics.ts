/**
 * /metrics with several worker processes: each has its own registry, so a scrape answered by one
 * would show that one alone. The worker that serves /metrics asks the primary over IPC; the
 * primary gathers every worker's registry (prom-client's AggregatorRegistry protocol) and answers
 * with the aggregate, each metric combined by its `aggregator` (sum by default).
 */
import cluster, { type Worker } from 'node:cluster'
import client from 'prom-client'

const requestType = 'tollbooth:cluster-metrics-request'
const responseType = 'tollbooth:cluster-metrics-response'
/** prom-client's own limit for the primary gathering the workers' registries is 5 s. */
const workerTimeoutMs = 6000

interface MetricsRequest { type: typeof requestType, id: number }
interface MetricsResponse { type: typeof responseType, id: number, metrics?: string, error?: string }

function isMessage<T extends { type: string }> (message: unknown, type: T['type']): message is T {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type
}

/** In the primary: answer the workers' requests for the aggregate. Returns a function that stops answering. */
export function serveClusterMetrics (): () => void {
  const aggregator = new client.AggregatorRegistry()
  const onMessage = (worker: Worker, message: unknown): void => {
    if (!isMessage<MetricsRequest>(message, requestType)) return
    aggregator.clusterMetrics().then(
      (metrics) => { send(worker, { type: responseType, id: message.id, metrics }) },
      (err: unknown) => { send(worker, { type: responseType, id: message.id, error: err instanceof Error ? err.message : String(err) }) }
    )
  }
  cluster.on('message', onMessage)
  return () => { cluster.off('message', onMessage) }
}

/** In the primary: every worker's registry, aggregated (the admin listener's /metrics under `serve --workers`). */
export function primaryMetrics (): { render: () => Promise<string>, contentType: string } {
  const aggregator = new client.AggregatorRegistry()
  return { render: async () => await aggregator.clusterMetrics(), contentType: aggregator.contentType }
}

function send (worker: Worker, response: MetricsResponse): void {
  // A worker that left while the others answered has no one to read this.
  if (worker.isConnected()) worker.send(response)
}

let exposed = false
let nextId = 0
const waiting = new Map<number, { resolve: (metrics: string) => void, reject: (err: Error) => void, timer: NodeJS.Timeout }>()

/**
 * In a worker: let the primary read `registry` (prom-client answers its requests once an
 * AggregatorRegistry exists in this process) and listen for our own answers.
 */
export function exposeRegistryToPrimary (registry: client.Registry): void {
  client.AggregatorRegistry.setRegistries([registry])
  if (exposed) return
  exposed = true
  // Created for its side effect: it installs prom-client's worker-side listener.
  void new client.AggregatorRegistry()
  process.on('message', (message: unknown) => {
    if (!isMessage<MetricsResponse>(message, responseType)) return
    const request = waiting.get(message.id)
    if (request === undefined) return
    waiting.delete(message.id)
    clearTimeout(request.timer)
    if (message.metrics !== undefined) request.resolve(message.metrics)
    else request.reject(new Error(message.error ?? 'the primary sent no metrics'))
  })
}

/** In a worker: the metrics of every worker, aggregated by the primary (Prometheus text). */
export async function clusterMetrics (): Promise<string> {
  if (process.send === undefined) throw new Error('not a cluster worker: no IPC channel to the primary')
  const id = nextId++
  const request: MetricsRequest = { type: requestType, id }
  return await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      waiting.delete(id)
      reject(new Error(`the cluster primary did not answer within ${workerTimeoutMs} ms`))
    }, workerTimeoutMs)
    waiting.set(id, { resolve, reject, timer })
    process.send?.(request)
  })
}
