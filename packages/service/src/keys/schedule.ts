/**
 * When each stored key signs and verifies: pure functions of the keys and the clock. A key signs
 * from its activation until the next one's, and verifies until its last token expires (plus a
 * clock leeway). A rotation creates a key `publishAheadMs` ahead (a reload interval plus the JWK
 * Set's cache lifetime), so every replica and verifier knows it before its first token.
 */

/** Clocks of replicas and verifiers may differ by this much. */
export const clockLeewayMs = 60_000

export interface ScheduledKey {
  kid: string
  alg: string
  activatesAtMs: number
  retiredAtMs: number | undefined
}

export interface Schedule<K> {
  /** The key that signs now (undefined only with no live key yet). */
  signing: K | undefined
  /** Keys that verify now, the signing one and those announced ahead included: the JWK Set. */
  verifying: K[]
}

function live<K extends ScheduledKey> (keys: readonly K[], nowMs: number): K[] {
  return keys.filter((key) => key.retiredAtMs === undefined || key.retiredAtMs > nowMs)
    .sort((a, b) => a.activatesAtMs - b.activatesAtMs)
}

export function keySchedule<K extends ScheduledKey> (keys: readonly K[], nowMs: number, accessTokenTtlMs: number): Schedule<K> {
  const ordered = live(keys, nowMs)
  let signing: K | undefined
  const verifying: K[] = []
  ordered.forEach((key, index) => {
    const next = ordered[index + 1]
    if (key.activatesAtMs <= nowMs && (next === undefined || next.activatesAtMs > nowMs)) signing = key
    const lastTokenExpiresAtMs = next === undefined ? Infinity : next.activatesAtMs + accessTokenTtlMs + clockLeewayMs
    if (lastTokenExpiresAtMs > nowMs) verifying.push(key)
  })
  return { signing, verifying }
}

export interface RotationPolicy {
  alg: string
  /** A key's signing life before the next one is created; 0: never automatically. */
  rotationMs: number
  publishAheadMs: number
}

/** When a new key should activate: at once with no live key, else `publishAheadMs` ahead when the newest is too old or of another algorithm. */
export function nextKeyActivation (keys: readonly ScheduledKey[], nowMs: number, policy: RotationPolicy): number | undefined {
  const newest = live(keys, nowMs).at(-1)
  if (newest === undefined) return nowMs
  if (newest.alg !== policy.alg) return nowMs + policy.publishAheadMs
  if (policy.rotationMs > 0 && newest.activatesAtMs + policy.rotationMs <= nowMs) return nowMs + policy.publishAheadMs
  return undefined
}
