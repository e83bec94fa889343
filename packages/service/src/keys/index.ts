/** The keys room's public face: what the rest of the service uses of it. */
export { DatabaseKeySource, FileKeySource, KeyRing, type KeySource, type RingKey, type RingLog } from './key-ring.js'
export { listKeys, retireKey, rotateKey, type KeyAdminOptions, type KeyCreation, type ListedKey } from './key-admin.js'
export { openSecret, parseKeyEncryptionKey, persistedKeyEncryptionKey, readPersistedKeyEncryptionKey, sealSecret } from './sealing.js'
export { type SigningAlgorithm } from './signing-key.js'
