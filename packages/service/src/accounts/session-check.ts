/**
 * Is an access token's session still live? One indexed query, its "yes" remembered for a short
 * while (TOLLBOOTH_SESSION_CHECK_CACHE_MS) so a burst of requests with one token costs one query.
 * A revocation made by this process forgets the session at once; one made by another replica is
 * seen here within the cache time at most. A "no" is final (a revoked session never comes back)
 * and is remembered too.
 */
import { performance } from 'node:perf_hooks'
import { type Queryable, isSessionLive } from '../db/index.js'
import { createError } from '../errors.js'

/** Sessions remembered at most; past it the memory starts again empty (a cheap bound). */
const maxEntries = 10_000

export class SessionCheck {
  private readonly live = new Map<string, { userId: string, untilMs: number }>()
  private readonly ended = new Set<string>()

  constructor (private readonly db: Queryable, private readonly cacheMs: number) {}

  /** Throws AUTH_SESSION_ENDED when the session is revoked, past its absolute end, gone, or not the user's. */
  async assertLive (sessionId: string, userId: string): Promise<void> {
    if (this.ended.has(sessionId)) throw createError('AUTH_SESSION_ENDED')
    const cached = this.live.get(sessionId)
    if (cached !== undefined && cached.userId === userId && cached.untilMs > performance.now()) return
    if (!await isSessionLive(this.db, sessionId, userId)) {
      this.forget([sessionId])
      throw createError('AUTH_SESSION_ENDED')
    }
    // A revocation by this process may have landed while the query ran.
    if (this.cacheMs > 0 && !this.ended.has(sessionId)) {
      if (this.live.size >= maxEntries) this.live.clear()
      this.live.set(sessionId, { userId, untilMs: performance.now() + this.cacheMs })
    }
  }

  /** Sessions that ended (revoked by this process, or found ended): refused from now on, whatever the cache held. */
  forget (sessionIds: Iterable<string>): void {
    for (const id of sessionIds) {
      this.live.delete(id)
      if (this.ended.size >= maxEntries) this.ended.clear()
      this.ended.add(id)
    }
  }
}
