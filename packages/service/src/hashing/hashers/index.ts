/** The hashing/hashers room's public face: what the rest of the service uses of it. */
export { bcryptMaxPasswordBytes, bcryptPasswordTooLong } from './bcrypt.js'
export { hasherFor, hashers } from './registry.js'
export { argon2Version, formatScrypt, parseArgon2, parseBcrypt, parseScrypt } from './phc.js'
export { scryptMaxmemBytes } from './scrypt.js'
