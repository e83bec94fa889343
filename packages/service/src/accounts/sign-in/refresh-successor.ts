/**
 * The successor of a rotated refresh token, kept for the refresh grace window: sealed with
 * AES-256-GCM under a key derived (HKDF-SHA256) from the rotated token itself. The database
 * holds only the token's SHA-256, so neither a database reader nor anyone without the rotated
 * token can open it; a second refresh of that token within the window (a browser retry, a
 * second tab) opens it and gets the same successor instead of revoking the session.
 * Layout: version (1 byte) | nonce (12) | tag (16) | ciphertext.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

const version = 1
const nonceBytes = 12
const tagBytes = 16
const info = Buffer.from('tollbooth refresh-token successor v1')

function sealingKey (presentedToken: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(presentedToken, 'utf8'), Buffer.alloc(0), info, 32))
}

export function sealSuccessor (presentedToken: string, successor: string): Buffer {
  const nonce = randomBytes(nonceBytes)
  const cipher = createCipheriv('aes-256-gcm', sealingKey(presentedToken), nonce)
  const ciphertext = Buffer.concat([cipher.update(successor, 'utf8'), cipher.final()])
  return Buffer.concat([Buffer.from([version]), nonce, cipher.getAuthTag(), ciphertext])
}

/** The successor sealed for this token; undefined when it does not open (altered, or another token). */
export function openSuccessor (presentedToken: string, sealed: Buffer): string | undefined {
  if (sealed.length <= 1 + nonceBytes + tagBytes || sealed[0] !== version) return undefined
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(presentedToken), sealed.subarray(1, 1 + nonceBytes))
    decipher.setAuthTag(sealed.subarray(1 + nonceBytes, 1 + nonceBytes + tagBytes))
    return Buffer.concat([decipher.update(sealed.subarray(1 + nonceBytes + tagBytes)), decipher.final()]).toString('utf8')
  } catch {
    return undefined
  }
}
