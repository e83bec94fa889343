/** The keys room's public face: what the rest of the service uses of it. */
export { DatabaseKeySource, FileKeySource, KeyRing, type KeySource, type RingKey, type RingLog } from './key-ring.js'
export { parseKeyEncryptionKey, persistedKeyEncryptionKey } from './sealing.js'
