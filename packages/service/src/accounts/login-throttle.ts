/**
 * The rules of login throttling (OWASP: an exponential delay, not a lockout; a known device judged
 * by its own failures), pure. Failures are counted per key in a fixed window from its first
 * failure; past a key's free failures each attempt waits `baseDelayMs`, doubled per failure, at
 * most `maxDelayMs`; the window's end starts again from zero, so no wait outlives its window.
 */
import net from 'node:net'
import type { FailureCount, ThrottleScope } from '../db/index.js'

export type { FailureCount }

export interface LoginThrottlePolicy {
  /** Failures an account may have in a window before each further login from an unknown client waits. */
  accountFreeFailures: number
  /** The same for one client address: much higher, so one office behind NAT is not locked out. */
  addressFreeFailures: number
  /** What each account that signed in from an address in the window adds to its bound (at most ten times it). */
  addressFreeFailuresPerAccount: number
  /** The same for a known device: judged by its own failures alone. */
  deviceFreeFailures: number
  windowMs: number
  /** The wait after the last free failure; doubled by each further failure. */
  baseDelayMs: number
  maxDelayMs: number
}

export type ThrottleDecision =
  | { allowed: true }
  | { allowed: false, retryAfterMs: number, scopes: ThrottleScope[] }

/** A window that started at or before this time is over: its row counts as zero. */
export function windowExpiredAtOrBefore (nowMs: number, policy: LoginThrottlePolicy): number {
  return nowMs - policy.windowMs
}

/** Failures that still count at `nowMs`: zero for no row or a row whose window is over. */
export function liveFailures (count: FailureCount | undefined, nowMs: number, policy: LoginThrottlePolicy): number {
  if (count === undefined || count.windowStartedAt <= windowExpiredAtOrBefore(nowMs, policy)) return 0
  return count.failures
}

/** How long after the `failures`-th failure the next attempt must wait. */
export function delayAfterMs (failures: number, freeFailures: number, policy: LoginThrottlePolicy): number {
  if (failures < freeFailures) return 0
  // 2 ** n is Infinity for a huge n, and Math.min takes the cap: no overflow to guard.
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (failures - freeFailures))
}

/** When the key may try again (epoch ms); at or before `nowMs` means now. */
export function allowedAt (count: FailureCount | undefined, freeFailures: number, nowMs: number, policy: LoginThrottlePolicy): number {
  if (count === undefined) return nowMs
  const failures = liveFailures(count, nowMs, policy)
  if (failures === 0) return nowMs
  const windowEndsAt = count.windowStartedAt + policy.windowMs
  return Math.min(count.lastFailureAt + delayAfterMs(failures, freeFailures, policy), windowEndsAt)
}

/**
 * A key's count with `inFlight` password checks under way counted as failures made at `nowMs`
 * (each may yet fail), so checks sent at once do not all pass on the count from before any of
 * them (checks-under-way.ts).
 */
export function withChecksInFlight (count: FailureCount | undefined, inFlight: number, nowMs: number, policy: LoginThrottlePolicy): FailureCount | undefined {
  if (inFlight <= 0) return count
  const live = liveFailures(count, nowMs, policy)
  const windowStartedAt = live > 0 && count !== undefined ? count.windowStartedAt : nowMs
  return { failures: live + inFlight, windowStartedAt, lastFailureAt: nowMs }
}

/** The free failures of one scope: the address's grow with the accounts that signed in from it lately. */
export function freeFailures (scope: ThrottleScope, policy: LoginThrottlePolicy, addressAccounts = 0): number {
  switch (scope) {
    case 'account': return policy.accountFreeFailures
    case 'device': return policy.deviceFreeFailures
    case 'address': return Math.min(10 * policy.addressFreeFailures, policy.addressFreeFailures + policy.addressFreeFailuresPerAccount * addressAccounts)
  }
}

/**
 * Whether a check may go on to its hash, given its keys' counts (an unknown client's account and
 * address, or a known device's own); when not, for how long.
 */
export function decide (counts: Partial<Record<ThrottleScope, FailureCount | undefined>>, nowMs: number, policy: LoginThrottlePolicy, addressAccounts = 0): ThrottleDecision {
  const waits = (Object.keys(counts) as ThrottleScope[]).map((scope): [ThrottleScope, number] =>
    [scope, allowedAt(counts[scope], freeFailures(scope, policy, addressAccounts), nowMs, policy) - nowMs])
  const blocking = waits.filter(([, waitMs]) => waitMs > 0)
  if (blocking.length === 0) return { allowed: true }
  return { allowed: false, retryAfterMs: Math.max(...blocking.map(([, waitMs]) => waitMs)), scopes: blocking.map(([scope]) => scope) }
}

/** Longest address key kept: a non-address from an X-Forwarded-For trusted wholesale is cut here. */
const maxAddressKeyLength = 64

/** The key an address is counted under: IPv4-mapped IPv6 as IPv4, other IPv6 by its /64 (one subscriber's block, so rotating escapes nothing). */
export function addressKey (address: string): string {
  const withoutZone = address.split('%')[0] ?? address
  if (net.isIPv4(withoutZone)) return withoutZone
  if (!net.isIPv6(withoutZone)) return address.slice(0, maxAddressKeyLength)
  const groups = ipv6Groups(withoutZone.toLowerCase())
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [high = 0, low = 0] = groups.slice(6)
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail converted). */
function ipv6Groups (address: string): number[] {
  const parse = (part: string): number[] => {
    if (part === '') return []
    return part.split(':').flatMap((piece) => {
      if (!piece.includes('.')) return [Number.parseInt(piece, 16)]
      const [a = 0, b = 0, c = 0, d = 0] = piece.split('.').map(Number)
      return [(a << 8) | b, (c << 8) | d]
    })
  }
  const [head = '', tail] = address.split('::')
  const headGroups = parse(head)
  const tailGroups = tail === undefined ? [] : parse(tail)
  return [...headGroups, ...new Array<number>(8 - headGroups.length - tailGroups.length).fill(0), ...tailGroups]
}
