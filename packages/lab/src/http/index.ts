/**
 * The lab's HTTP clients: a target (one service's URL) that sends requests through undici or
 * through the lab's own HTTP/1.1 client, and never throws for a request that got no answer.
 */
export { defaultLoadClient, HttpTarget, loopbackSourceAddresses, maxSourceAddresses } from './target.js'
export { httpClients, type HttpClientKind, type LabRequest, type LabResponse, type TransportFailure } from './types.js'
