/**
 * When each stored key signs and verifies: pure functions of the keys and the clock. A key signs
 * from its activation until the next one's, and verifies until its last token expires (plus a
 * clock leeway). With none activated yet (the one signing was retired, or this clock is behind the
 * one that created the key), the first announced one signs at once rather than none. A rotation
 * creates a key `publishAheadMs` ahead (a reload interval plus the JWK Set's cache lifetime), so
 * every replica and verifier knows it before its first token. A retired key neither signs nor
 * verifies, whatever time its retirement names: a replica whose clock is behind the database's
 * must not keep it a moment longer.
 */

/** Clocks of replicas and verifiers may differ by this much. */
export const clockLeewayMs = 60_000

export interface ScheduledKey {
  kid: string
  alg: string
  activatesAtMs: number
  /** When it was retired; set: ended. */
  retiredAtMs: number | undefined
}

export interface Schedule<K> {
  /** The key that signs now (undefined only with no live key). */
  signing: K | undefined
  /** Keys that verify now, the signing one and those announced ahead included: the JWK Set. */
  verifying: K[]
}

function live<K extends ScheduledKey> (keys: readonly K[]): K[] {
  return keys.filter((key) => key.retiredAtMs === undefined).sort((a, b) => a.activatesAtMs - b.activatesAtMs)
}

export function keySchedule<K extends ScheduledKey> (keys: readonly K[], nowMs: number, accessTokenTtlMs: number): Schedule<K> {
  const ordered = live(keys)
  let signing: K | undefined
  const verifying: K[] = []
  ordered.forEach((key, index) => {
    const next = ordered[index + 1]
    if (key.activatesAtMs <= nowMs && (next === undefined || next.activatesAtMs > nowMs)) signing = key
    const lastTokenExpiresAtMs = next === undefined ? Infinity : next.activatesAtMs + accessTokenTtlMs + clockLeewayMs
    if (lastTokenExpiresAtMs > nowMs) verifying.push(key)
  })
  return { signing: signing ?? ordered[0], verifying }
}

export interface RotationPolicy {
  alg: string
  /** A key's signing life before the next one is created; 0: never automatically. */
  rotationMs: number
  publishAheadMs: number
}

/** When a new key should activate: at once with no live key, else `publishAheadMs` ahead when the newest is too old or of another algorithm. */
export function nextKeyActivation (keys: readonly ScheduledKey[], nowMs: number, policy: RotationPolicy): number | undefined {
  const newest = live(keys).at(-1)
  if (newest === undefined) return nowMs
  if (newest.alg !== policy.alg) return nowMs + policy.publishAheadMs
  if (policy.rotationMs > 0 && newest.activatesAtMs + policy.rotationMs <= nowMs) return nowMs + policy.publishAheadMs
  return undefined
}
