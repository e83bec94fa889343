import assert from 'node:assert/strict'
import { createHmac, createPrivateKey, randomUUID, createPublicKey, generateKeyPairSync, sign as cryptoSign, type KeyObject } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose'
import { loadConfig } from '../../src/config/index.js'
import { listSigningKeys } from '../../src/db/signing-keys.js'
import { openAccessTokens, type OpenedAccessTokens } from '../../src/accounts/access-tokens.js'
import { createAccessTokens } from '../../src/accounts/tokens.js'
import { openPrivateKey, parseKeyEncryptionKey } from '../../src/keys/sealing.js'
import { clockLeewayMs } from '../../src/keys/schedule.js'
import { createTestDatabase, watchQueries, type TestDatabase } from '../helpers/database.js'
import { capturingLogger, registerUser, request, startTestService, testJwtSecret, testKeyEncryptionKey, type TestService } from '../helpers/service.js'

/** The access tokens a service would open, without the rest of the service. */
async function open (db: TestDatabase, overrides: Record<string, unknown>): Promise<OpenedAccessTokens> {
  const config = loadConfig({ env: {}, overrides: { databaseUrl: db.url, publicUrl: 'http://127.0.0.1', keyEncryptionKey: testKeyEncryptionKey, logLevel: 'silent', ...overrides } })
  return await openAccessTokens({ config, db: db.pool, jwtSecret: undefined, log: capturingLogger('silent').logger, now: Date.now })
}

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')

/** A compact JWS signed with `key` (Ed25519 or HMAC secret) and whatever header the test wants. */
function forge (header: Record<string, unknown>, payload: Record<string, unknown>, key: KeyObject | string | undefined): string {
  const input = `${b64url(header)}.${b64url(payload)}`
  if (key === undefined) return `${input}.`
  const signature = typeof key === 'string' ? createHmac('sha256', key).update(input).digest() : cryptoSign(null, Buffer.from(input), key)
  return `${input}.${signature.toString('base64url')}`
}

/** Well-formed claims for the user and session of `token` (one the service issued), fresh, with this lifetime. */
function claims (token: string, expiresInSeconds = 600): Record<string, unknown> {
  const { sub, sid } = decodeJwt(token)
  const now = Math.floor(Date.now() / 1000)
  return { sub, sid, iss: 'tollbooth', aud: 'tollbooth-api', iat: now, exp: now + expiresInSeconds }
}

async function jwks (service: { url: string }): Promise<JSONWebKeySet> {
  const response = await request<JSONWebKeySet>(service, 'GET', '/.well-known/jwks.json')
  assert.equal(response.status, 200)
  return response.body
}

/** The private key of a stored signing key, opened as the service does (tests only). */
async function storedPrivateKey (db: TestDatabase, kid: string): Promise<KeyObject> {
  const row = (await listSigningKeys(db.pool)).find((key) => key.kid === kid)
  assert.ok(row !== undefined, `key ${kid} is stored`)
  const der = openPrivateKey(parseKeyEncryptionKey(testKeyEncryptionKey, 'test'), kid, row.privateKeySealed)
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })
}

async function me (service: { url: string }, token: string): Promise<{ status: number, code: string | undefined }> {
  const response = await request(service, 'GET', '/api/v1/me', { token })
  return { status: response.status, code: response.body?.error?.code }
}

describe('access tokens other services verify (EdDSA, the default)', () => {
  let service: TestService
  let token: string
  let userId: string
  before(async () => {
    service = await startTestService()
    const { body } = await registerUser(service)
    token = body.accessToken
    userId = body.user.id
  })
  after(async () => { await service.close() })

  it('verify with jose from the fetched /.well-known/jwks.json alone', async () => {
    const set = await jwks(service)
    assert.equal(set.keys.length, 1)
    const [key] = set.keys
    assert.equal(key?.use, 'sig')
    assert.equal(key?.alg, 'EdDSA')
    assert.equal(key?.kty, 'OKP')
    assert.equal(key?.crv, 'Ed25519')
    assert.equal(key?.d, undefined, 'no private part is published')
    const header = decodeProtectedHeader(token)
    assert.equal(header.alg, 'EdDSA')
    assert.equal(header.kid, key?.kid)

    const local = await jwtVerify(token, createLocalJWKSet(set), { issuer: 'tollbooth', algorithms: ['EdDSA'] })
    assert.equal(local.payload.sub, userId)
    const remote = await jwtVerify(token, createRemoteJWKSet(new URL(`${service.url}/.well-known/jwks.json`)), { issuer: 'tollbooth' })
    assert.equal(remote.payload.sub, userId)
    assert.equal(remote.payload.exp, (remote.payload.iat ?? 0) + 900)
  })

  it('serves the JWK Set with cache headers, without a database query, and lists it in the OpenAPI document', async () => {
    const watch = watchQueries(service.db.pool)
    try {
      const response = await request(service, 'GET', '/.well-known/jwks.json')
      assert.equal(response.headers.get('cache-control'), 'public, max-age=300')
      assert.match(response.headers.get('content-type') ?? '', /application\/json/)
      assert.deepEqual(watch.texts, [])
    } finally {
      watch.stop()
    }
    const openapi = await request(service, 'GET', '/openapi.json')
    assert.ok(openapi.body.paths['/.well-known/jwks.json']?.get !== undefined)
  })

  it('refuses a tampered token, alg none, HS256 against the EdDSA key, an unknown kid, no kid and an expired token: 401 AUTH_TOKEN_INVALID', async () => {
    assert.equal((await me(service, token)).status, 200)
    const [header = '', payload = '', signature = ''] = token.split('.')
    const { kid } = decodeProtectedHeader(token)
    const other = generateKeyPairSync('ed25519').privateKey
    const publicPem = createPublicKey(await storedPrivateKey(service.db, String(kid))).export({ type: 'spki', format: 'pem' }) as string
    const forged = {
      // Another user's id in the claims, the signature kept.
      tampered: `${header}.${b64url({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: '00000000-0000-4000-8000-000000000000' })}.${signature}`,
      // One flipped signature character.
      badSignature: `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`,
      algNone: forge({ alg: 'none', typ: 'JWT', kid }, claims(token), undefined),
      // The classic key confusion: the public key as an HMAC secret.
      hs256WithPublicKey: forge({ alg: 'HS256', typ: 'JWT', kid }, claims(token), publicPem),
      hs256WithSecret: forge({ alg: 'HS256', typ: 'JWT', kid }, claims(token), testJwtSecret),
      unknownKid: forge({ alg: 'EdDSA', typ: 'JWT', kid: 'not-a-key-of-ours' }, claims(token), other),
      noKid: forge({ alg: 'EdDSA', typ: 'JWT' }, claims(token), await storedPrivateKey(service.db, String(kid))),
      expired: forge({ alg: 'EdDSA', typ: 'JWT', kid }, claims(token, -120), await storedPrivateKey(service.db, String(kid))),
      otherIssuer: forge({ alg: 'EdDSA', typ: 'JWT', kid }, { ...claims(token), iss: 'someone-else' }, await storedPrivateKey(service.db, String(kid))),
      // Headers that are no JSON object: refused before JSON.parse (tokenKid).
      garbage: 'x.y.z',
      headerAnArray: `${Buffer.from(JSON.stringify(['EdDSA', kid])).toString('base64url')}.${payload}.${signature}`,
      headerNotJson: `${Buffer.from(`{${String(kid)}`).toString('base64url')}.${payload}.${signature}`,
    }
    for (const [what, candidate] of Object.entries(forged)) {
      assert.deepEqual(await me(service, candidate), { status: 401, code: 'AUTH_TOKEN_INVALID' }, what)
    }
    // The same key signing a well-formed token passes: the refusals above are about what was altered.
    const good = forge({ alg: 'EdDSA', typ: 'JWT', kid }, claims(token), await storedPrivateKey(service.db, String(kid)))
    assert.equal((await me(service, good)).status, 200)
    // So does a header with whitespace before its object, valid JSON (RFC 8259).
    const spacedInput = `${Buffer.from(` \n{"alg":"EdDSA","typ":"JWT","kid":${JSON.stringify(kid)}}`).toString('base64url')}.${b64url(claims(token))}`
    const spaced = `${spacedInput}.${cryptoSign(null, Buffer.from(spacedInput), await storedPrivateKey(service.db, String(kid))).toString('base64url')}`
    assert.equal((await me(service, spaced)).status, 200)
  })

  it('requires exp, iat, iss, sub, aud and sid, ours, with iat not ahead and a lifetime no longer than configured', async () => {
    const { kid } = decodeProtectedHeader(token)
    const key = await storedPrivateKey(service.db, String(kid))
    const signed = (payload: Record<string, unknown>): string => forge({ alg: 'EdDSA', typ: 'JWT', kid }, payload, key)
    const good = claims(token)
    const now = Math.floor(Date.now() / 1000)
    const without = (claim: string): Record<string, unknown> => Object.fromEntries(Object.entries(good).filter(([name]) => name !== claim))
    const refused: Record<string, Record<string, unknown>> = {
      ...Object.fromEntries(['exp', 'iat', 'iss', 'sub', 'aud', 'sid'].map((claim) => [`no ${claim}`, without(claim)])),
      'a foreign aud': { ...good, aud: 'another-service' },
      'ours and a foreign aud': { ...good, aud: ['tollbooth-api', 'another-service'] },
      'a sid that is not a uuid': { ...good, sid: 'session-1' },
      'iat a year ahead': { ...good, iat: now + 365 * 86400, exp: now + 365 * 86400 + 600 },
      'exp ten years away': { ...good, exp: now + 10 * 365 * 86400 },
      'a lifetime one second past the configured one': { ...good, exp: now + 901 },
      'a string exp': { ...good, exp: String(now + 600) },
    }
    for (const [what, payload] of Object.entries(refused)) {
      assert.deepEqual(await me(service, signed(payload)), { status: 401, code: 'AUTH_TOKEN_INVALID' }, what)
    }
    assert.equal((await me(service, signed(good))).status, 200, 'the same claims, well-formed, pass')
    assert.equal((await me(service, signed({ ...good, iat: now + 30, exp: now + 630 }))).status, 200, 'iat within the clock skew passes')
    assert.equal((await me(service, signed({ ...good, exp: now + 900 }))).status, 200, 'exactly the configured lifetime passes')
    const issued = decodeJwt(token)
    assert.deepEqual([issued.iss, issued.aud, typeof issued.sid, (issued.exp ?? 0) - (issued.iat ?? 0)], ['tollbooth', 'tollbooth-api', 'string', 900], 'what the service issues')
    await jwtVerify(token, createLocalJWKSet(await jwks(service)), { issuer: 'tollbooth', audience: 'tollbooth-api', requiredClaims: ['exp', 'iat', 'sub', 'sid'] })
  })

  it('HS256 tokens follow the same rules', () => {
    const tokens = createAccessTokens(testJwtSecret, 900)
    const userId = randomUUID()
    const sessionId = randomUUID()
    assert.deepEqual(tokens.verify(tokens.sign(userId, sessionId, ['pwd'])), { userId, sessionId, amr: ['pwd'] })
    const now = Math.floor(Date.now() / 1000)
    const good = { sub: userId, sid: sessionId, iss: 'tollbooth', aud: 'tollbooth-api', iat: now, exp: now + 600 }
    assert.deepEqual(tokens.verify(forge({ alg: 'HS256', typ: 'JWT' }, good, testJwtSecret)), { userId, sessionId, amr: [] }, 'a token without amr verifies with an empty one')
    for (const payload of [{ ...good, sid: undefined }, { ...good, aud: 'elsewhere' }, { ...good, exp: now + 3600 }, { ...good, iat: now + 3600, exp: now + 4000 }]) {
      assert.throws(() => tokens.verify(forge({ alg: 'HS256', typ: 'JWT' }, payload, testJwtSecret)), { code: 'AUTH_TOKEN_INVALID' })
    }
  })

  it('keeps the private key sealed: the table holds neither the PEM nor the JWK d', async () => {
    const { rows } = await service.db.pool.query<{ text: string }>('SELECT signing_keys::text AS text FROM signing_keys')
    const table = rows.map((row) => row.text).join('\n')
    const [stored] = await listSigningKeys(service.db.pool)
    assert.ok(stored !== undefined)
    const privateKey = await storedPrivateKey(service.db, stored.kid)
    const { d } = privateKey.export({ format: 'jwk' })
    const der = privateKey.export({ type: 'pkcs8', format: 'der' })
    const pemBody = (privateKey.export({ type: 'pkcs8', format: 'pem' }) as string).split('\n')[1] ?? ''
    assert.ok(typeof d === 'string' && d.length > 20)
    for (const [what, secret] of [['d (base64url)', d], ['d (hex)', Buffer.from(d, 'base64url').toString('hex')], ['PKCS#8 DER (hex)', der.toString('hex')], ['PEM body', pemBody]] as const) {
      assert.ok(!table.includes(secret), `the table does not contain ${what}`)
    }
    assert.throws(() => openPrivateKey(Buffer.alloc(32, 1), stored.kid, stored.privateKeySealed), { code: 'SIGNING_KEY_UNREADABLE' })
    assert.throws(() => openPrivateKey(parseKeyEncryptionKey(testKeyEncryptionKey, 'test'), 'another-kid', stored.privateKeySealed), { code: 'SIGNING_KEY_UNREADABLE' }, 'the kid is authenticated with the key')
  })
})

describe('keys shared by replicas on one database', () => {
  it('two services started together create one key, serve the same JWK Set and accept each other\'s tokens', async () => {
    const db = await createTestDatabase()
    const [a, b] = await Promise.all([startTestService({ db }), startTestService({ db })])
    try {
      assert.equal((await listSigningKeys(db.pool)).length, 1)
      assert.deepEqual(await jwks(a), await jwks(b))
      const fromA = (await registerUser(a)).body.accessToken
      const fromB = (await registerUser(b)).body.accessToken
      assert.equal((await me(b, fromA)).status, 200)
      assert.equal((await me(a, fromB)).status, 200)
      // And a verifier that fetched b's set accepts a's token.
      const set = createLocalJWKSet(await jwks(b))
      await jwtVerify(fromA, set, { issuer: 'tollbooth' })
    } finally {
      await a.close()
      await b.close()
      await db.drop()
    }
  })

  it('a replica picks up a key created by another (notified, or on a token naming it), reloading at most once a second for unknown kids', async () => {
    const db = await createTestDatabase()
    let nowMs = Date.now()
    const b = await startTestService({ db, now: () => nowMs, config: { signingKeyRotationSeconds: 3600 } })
    const a = await startTestService({ db, now: () => nowMs, config: { signingKeyRotationSeconds: 3600 } })
    try {
      // a rotates (its key is due); b learns of it by the notification or, at the latest, on the token naming it.
      nowMs += 3_600_000
      assert.equal(await a.app.keyRing?.reload(), true)
      const keys = await listSigningKeys(db.pool)
      assert.equal(keys.length, 2)
      const newest = keys.at(-1)
      assert.ok(newest !== undefined)
      const issued = (await registerUser(b)).body.accessToken as string
      const token = forge({ alg: 'EdDSA', typ: 'JWT', kid: newest.kid }, claims(issued), await storedPrivateKey(db, newest.kid))
      assert.equal((await me(b, token)).status, 200, 'b knows the new key and accepts it')
      assert.equal((await jwks(b)).keys.length, 2)

      const watch = watchQueries(db.pool)
      try {
        const stranger = generateKeyPairSync('ed25519').privateKey
        const unknown = await Promise.all(Array.from({ length: 20 }, async (_, i) => await me(b, forge({ alg: 'EdDSA', typ: 'JWT', kid: `made-up-${i}` }, claims(issued), stranger))))
        for (const answer of unknown) assert.deepEqual(answer, { status: 401, code: 'AUTH_TOKEN_INVALID' })
        const reloads = watch.texts.filter((text) => text.includes('FROM signing_keys')).length
        assert.ok(reloads <= 1, `20 made-up kids within a second cost ${reloads} reloads`)
      } finally {
        watch.stop()
      }
    } finally {
      await a.close()
      await b.close()
      await db.drop()
    }
  })

  it('refuses to start with another key-encryption key than the one that sealed the signing key', async () => {
    const db = await createTestDatabase()
    try {
      const first = await open(db, {})
      first.keyRing?.close()
      await assert.rejects(open(db, { keyEncryptionKey: Buffer.alloc(32, 9).toString('base64') }), { code: 'SIGNING_KEY_UNREADABLE' })
    } finally {
      await db.drop()
    }
  })

  it('replicas starting together create one key', async () => {
    const db = await createTestDatabase()
    try {
      // Settled, not all: a ring left open (its listening connection) would keep the file's process alive.
      const settled = await Promise.allSettled(Array.from({ length: 6 }, async () => await open(db, {})))
      const opened = settled.flatMap((result) => result.status === 'fulfilled' ? [result.value] : [])
      await Promise.all(opened.map(async ({ keyRing }) => { await keyRing?.close() }))
      assert.deepEqual(settled.filter((result) => result.status === 'rejected'), [], 'every replica opened')
      assert.equal((await listSigningKeys(db.pool)).length, 1)
      assert.equal(new Set(opened.map(({ keyRing }) => keyRing?.signing.kid)).size, 1)
    } finally {
      await db.drop()
    }
  })
})

describe('rotation', () => {
  it('a new key is published ahead, then signs; the old key verifies until its last token expires, then leaves the JWK Set', async () => {
    const db = await createTestDatabase()
    let nowMs = Date.now()
    const ttlSeconds = 900
    const service = await startTestService({ db, now: () => nowMs, config: { signingKeyRotationSeconds: 3600, signingKeyReloadSeconds: 60, jwksMaxAgeSeconds: 300, accessTokenTtlSeconds: ttlSeconds } })
    try {
      const ring = service.app.keyRing
      assert.ok(ring !== null)
      const user = await registerUser(service)
      const oldToken = user.body.accessToken as string
      const oldKid = decodeProtectedHeader(oldToken).kid
      const login = async (): Promise<string> => (await request(service, 'POST', '/api/v1/auth/login', { body: { email: user.email, password: user.password } })).body.accessToken as string

      // Not yet due: a reload changes nothing.
      nowMs += 3_599_000
      await ring.reload()
      assert.equal((await jwks(service)).keys.length, 1)

      // Due: the next key is created and published, but signs only 60 + 300 s later.
      nowMs += 1000
      await ring.reload()
      const published = (await jwks(service)).keys.map((key) => key.kid)
      assert.equal(published.length, 2)
      const newKid = published.find((kid) => kid !== oldKid)
      assert.equal(decodeProtectedHeader(await login()).kid, oldKid, 'the new key does not sign before every replica and cache knows it')

      nowMs += 360_000
      await ring.reload()
      const newToken = await login()
      assert.equal(decodeProtectedHeader(newToken).kid, newKid, 'the new key signs')
      assert.equal((await me(service, oldToken)).status, 200, 'the old key still verifies its tokens')
      const set = createLocalJWKSet(await jwks(service))
      await jwtVerify(oldToken, set, { issuer: 'tollbooth' })
      await jwtVerify(newToken, set, { issuer: 'tollbooth' })

      // A token the old key signed at its very last moment, valid for the whole TTL (by its own exp).
      const lastOld = forge({ alg: 'EdDSA', typ: 'JWT', kid: oldKid }, claims(oldToken, ttlSeconds), await storedPrivateKey(db, String(oldKid)))
      nowMs += ttlSeconds * 1000 + clockLeewayMs - 1000
      await ring.reload()
      assert.equal((await me(service, lastOld)).status, 200, 'within the TTL (and leeway) of the switch, the old key verifies')

      nowMs += 2000
      await ring.reload()
      assert.deepEqual((await jwks(service)).keys.map((key) => key.kid), [newKid], 'past it, the old key leaves the JWK Set')
      assert.deepEqual(await me(service, lastOld), { status: 401, code: 'AUTH_TOKEN_INVALID' }, 'and its tokens are refused, whatever their exp')
      assert.deepEqual(await me(service, oldToken), { status: 401, code: 'AUTH_TOKEN_INVALID' })
      assert.equal((await me(service, newToken)).status, 200)
    } finally {
      await service.close()
      await db.drop()
    }
  })

  it('a key retired in the table stops verifying at the next reload, and a new one signs', async () => {
    const db = await createTestDatabase()
    const service = await startTestService({ db })
    try {
      const token = (await registerUser(service)).body.accessToken as string
      const kid = String(decodeProtectedHeader(token).kid)
      await db.pool.query('UPDATE signing_keys SET retired_at = now() - interval \'1 second\' WHERE kid = $1', [kid])
      await service.app.keyRing?.reload()
      assert.deepEqual(await me(service, token), { status: 401, code: 'AUTH_TOKEN_INVALID' })
      const replacement = (await registerUser(service)).body.accessToken as string
      assert.notEqual(decodeProtectedHeader(replacement).kid, kid)
      assert.equal((await me(service, replacement)).status, 200)
      assert.deepEqual((await jwks(service)).keys.map((key) => key.kid), [decodeProtectedHeader(replacement).kid])
    } finally {
      await service.close()
      await db.drop()
    }
  })
})

describe('other ways to sign', () => {
  it('ES256: jose verifies it from the JWK Set', async () => {
    const service = await startTestService({ config: { jwtAlgorithm: 'ES256' } })
    try {
      const { body } = await registerUser(service)
      const set = await jwks(service)
      assert.equal(set.keys[0]?.alg, 'ES256')
      assert.equal(set.keys[0]?.crv, 'P-256')
      const { payload, protectedHeader } = await jwtVerify(body.accessToken as string, createLocalJWKSet(set), { issuer: 'tollbooth', algorithms: ['ES256'] })
      assert.equal(payload.sub, body.user.id)
      assert.equal(protectedHeader.alg, 'ES256')
      assert.equal((await me(service, body.accessToken as string)).status, 200)
    } finally {
      await service.close()
    }
  })

  it('HS256: today\'s shared secret, and an empty JWK Set', async () => {
    const service = await startTestService({ config: { jwtAlgorithm: 'HS256' } })
    try {
      const { body } = await registerUser(service)
      assert.deepEqual(await jwks(service), { keys: [] })
      assert.equal(decodeProtectedHeader(body.accessToken as string).alg, 'HS256')
      await jwtVerify(body.accessToken as string, new TextEncoder().encode(testJwtSecret), { issuer: 'tollbooth' })
      assert.equal((await service.db.pool.query('SELECT 1 FROM signing_keys')).rowCount, 0, 'no key is created')
    } finally {
      await service.close()
    }
  })

  it('PEM files: the signing key and an older one that still verifies, nothing stored', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-keys-'))
    const current = generateKeyPairSync('ed25519')
    const previous = generateKeyPairSync('ed25519')
    const signingKeyFile = path.join(dir, 'signing.pem')
    const previousFile = path.join(dir, 'previous.pub.pem')
    fs.writeFileSync(signingKeyFile, current.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
    fs.writeFileSync(previousFile, previous.publicKey.export({ type: 'spki', format: 'pem' }))
    const service = await startTestService({ config: { signingKeyFile, verificationKeyFiles: previousFile } })
    try {
      const { body } = await registerUser(service)
      const set = await jwks(service)
      assert.equal(set.keys.length, 2)
      const header = decodeProtectedHeader(body.accessToken as string)
      assert.equal(header.kid, set.keys[0]?.kid)
      await jwtVerify(body.accessToken as string, createLocalJWKSet(set), { issuer: 'tollbooth' })
      const previousKid = set.keys[1]?.kid
      const old = forge({ alg: 'EdDSA', typ: 'JWT', kid: previousKid }, claims(body.accessToken as string), previous.privateKey)
      assert.equal((await me(service, old)).status, 200)
      assert.equal((await service.db.pool.query('SELECT 1 FROM signing_keys')).rowCount, 0)
    } finally {
      await service.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses a signing key file of another algorithm than the configured one', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-keys-'))
    const signingKeyFile = path.join(dir, 'p256.pem')
    fs.writeFileSync(signingKeyFile, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }))
    const db = await createTestDatabase()
    try {
      await assert.rejects(open(db, { signingKeyFile }), (err: { code?: string, message: string }) => err.code === 'CONFIG_INVALID' && /ES256 key, but TOLLBOOTH_JWT_ALGORITHM is EdDSA/.test(err.message))
    } finally {
      await db.drop()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('the key-encryption key in development', () => {
  it('is generated once into the data folder (mode 600), said in the log, reused, and never logged itself', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-kek-'))
    const db = await createTestDatabase()
    // As `npm start` on the embedded database: no DATABASE_URL, no key configured.
    const config = loadConfig({ env: {}, overrides: { dataDir, logLevel: 'silent' } })
    assert.equal(config.keyEncryptionKey, undefined)
    try {
      const { logger, lines } = capturingLogger('info')
      const first = await openAccessTokens({ config, db: db.pool, jwtSecret: undefined, log: logger, now: Date.now })
      first.keyRing?.close()
      const token = first.accessTokens.sign(randomUUID(), randomUUID(), ['pwd'])
      const file = path.join(dataDir, 'key-encryption-key')
      assert.equal(fs.statSync(file).mode & 0o777, 0o600)
      assert.ok(lines.some((line) => String(line.msg).includes('generated one into the data folder') && line.file === file))
      const kek = fs.readFileSync(file, 'utf8').trim()
      const logged = JSON.stringify(lines)
      assert.ok(!logged.includes(kek), 'the key is not in the log')
      assert.ok(!logged.includes('PRIVATE KEY'), 'no private key is in the log')

      const again = capturingLogger('info')
      const second = await openAccessTokens({ config, db: db.pool, jwtSecret: undefined, log: again.logger, now: Date.now })
      second.keyRing?.close()
      assert.equal(second.keyRing?.signing.kid, first.keyRing?.signing.kid, 'the same key opens the stored signing key')
      assert.ok(typeof (await second.accessTokens.verify(second.accessTokens.sign(randomUUID(), randomUUID(), ['pwd']))).userId === 'string')
      assert.ok(typeof (await second.accessTokens.verify(token)).userId === 'string')
      assert.ok(!again.lines.some((line) => String(line.msg).includes('generated one')))
    } finally {
      await db.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
