/** One kind's queue: a FIFO per client, clients served round robin (Map order is the turn order). */
export class FairQueue<T extends { readonly client: string }> {
  private readonly byClient = new Map<string, Set<T>>()
  size = 0

  add (ticket: T): void {
    let own = this.byClient.get(ticket.client)
    if (own === undefined) {
      own = new Set()
      this.byClient.set(ticket.client, own)
    }
    own.add(ticket)
    this.size++
  }

  delete (ticket: T): boolean {
    const own = this.byClient.get(ticket.client)
    if (own?.delete(ticket) !== true) return false
    if (own.size === 0) this.byClient.delete(ticket.client)
    this.size--
    return true
  }

  /** The next client's oldest ticket; that client goes to the back of the turn order. */
  shift (): T | undefined {
    const first = this.byClient.entries().next().value
    if (first === undefined) return undefined
    const [client, own] = first
    const ticket = own.values().next().value as T
    own.delete(ticket)
    this.size--
    this.byClient.delete(client)
    if (own.size > 0) this.byClient.set(client, own)
    return ticket
  }

  queuedBy (client: string): number {
    return this.byClient.get(client)?.size ?? 0
  }

  /**
   * Tickets served before a new one of `client`: its own backlog, and from every other client
   * at most one more than that backlog (round robin; counting the extra turn is the cautious side).
   */
  aheadOf (client: string): number {
    const own = this.queuedBy(client)
    let ahead = own
    for (const [other, tickets] of this.byClient) if (other !== client) ahead += Math.min(tickets.size, own + 1)
    return ahead
  }

  /** The newest ticket of the client with the most queued, if that is more than `than`. */
  newestOfHeaviest (than: number): T | undefined {
    let heaviest: Set<T> | undefined
    // Ties go to the client latest in the turn order: the newest arrivals are given up first.
    for (const tickets of this.byClient.values()) if (tickets.size > than && tickets.size >= (heaviest?.size ?? 0)) heaviest = tickets
    if (heaviest === undefined) return undefined
    let newest: T | undefined
    for (newest of heaviest);
    return newest
  }

  * drain (): Generator<T> {
    for (const tickets of this.byClient.values()) yield * tickets
    this.byClient.clear()
    this.size = 0
  }
}
