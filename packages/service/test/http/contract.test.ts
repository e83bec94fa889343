/**
 * The OpenAPI document (GET /openapi.json) says what the code does: what it declares valid is
 * accepted and what it refuses is declared invalid (schemathesis's positive and negative data
 * checks), and every status a route can answer is in its list.
 */
import { labRoutes } from '../../src/harness/lab-routes.js'
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerUser, request, startTestService, type TestService } from '../helpers/service.js'

interface Operation {
  parameters?: Array<{ name: string, in: string, schema: { type?: string, pattern?: string } }>
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>
}
type OpenApiDocument = { paths: Record<string, Record<string, Operation>> }

async function openApiDocument (service: TestService): Promise<OpenApiDocument> {
  const response = await request<OpenApiDocument>(service, 'GET', '/openapi.json')
  assert.equal(response.status, 200)
  return response.body
}

function queryPattern (document: OpenApiDocument, name: string): RegExp {
  const parameter = document.paths['/api/v1/posts']?.get?.parameters?.find((candidate) => candidate.in === 'query' && candidate.name === name)
  assert.ok(parameter !== undefined, `${name} is documented`)
  assert.equal(parameter.schema.type, 'string')
  assert.ok(parameter.schema.pattern !== undefined, `${name} has a pattern`)
  // ajv compiles patterns with the u flag; so does this.
  return new RegExp(parameter.schema.pattern, 'u')
}

const base64urlAlphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
/** The cursor format of routes/posts.ts: base64url of `p:` and 1 to 15 digits. */
function encodeCursor (digits: string): string {
  return Buffer.from(`p:${digits}`).toString('base64url')
}
function isIssuedCursor (text: string): boolean {
  const decoded = Buffer.from(text, 'base64url')
  return /^p:\d{1,15}$/.test(decoded.toString('latin1')) && decoded.toString('base64url') === text
}

describe('the OpenAPI document lists every status a route can answer', () => {
  let service: TestService
  let document: OpenApiDocument
  before(async () => {
    service = await startTestService({ harness: { strategy: 'tollbooth', shedding: true, apiRoutes: labRoutes } })
    document = await openApiDocument(service)
  })
  after(async () => { await service.close() })

  it('every /api/v1 operation documents 503 (any of them can be shed under overload), as an ErrorResponse', () => {
    const operations = Object.entries(document.paths)
      .filter(([path]) => path.startsWith('/api/v1/'))
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })))
    assert.ok(operations.length >= 8, `the API's operations: ${operations.map(({ name }) => name).join(', ')}`)
    for (const { name, operation } of operations) {
      const shed = operation.responses['503']
      assert.ok(shed !== undefined, `${name} documents 503`)
      assert.equal(shed.content?.['application/json']?.schema.$ref, '#/components/schemas/ErrorResponse', `${name}: 503 is an ErrorResponse`)
    }
  })

  it('a path parameter held to a pattern in its route is documented by its name alone: /api/v1/me/passkeys/{id}', () => {
    const paths = Object.keys(document.paths).filter((path) => path.startsWith('/api/v1/me/passkeys'))
    assert.deepEqual(paths.sort(), ['/api/v1/me/passkeys', '/api/v1/me/passkeys/options', '/api/v1/me/passkeys/{id}'])
    assert.deepEqual(Object.keys(document.paths['/api/v1/me/passkeys/{id}'] ?? {}).sort(), ['delete', 'patch'])
  })

  it('the logins document 429 (the password-guessing throttle)', () => {
    for (const path of ['/api/v1/auth/login', '/api/v1/lab/login']) {
      assert.equal(document.paths[path]?.post?.responses['429']?.content?.['application/json']?.schema.$ref, '#/components/schemas/ErrorResponse', path)
    }
  })
})

describe('GET /api/v1/posts takes exactly the query values its document admits', () => {
  let service: TestService
  let document: OpenApiDocument
  before(async () => {
    service = await startTestService()
    document = await openApiDocument(service)
  })
  after(async () => { await service.close() })

  it('limit: valid for the document if and only if accepted, 1 to 100', async () => {
    const limitPattern = queryPattern(document, 'limit')
    const candidates = ['0', '1', '2', '9', '10', '20', '42', '99', '100', '101', '150', '999', '1000', '00', '01', '007', '-1', '+1', '1.0', '1e2', ' 1', '1 ', 'ten', '', '٣']
    for (const limit of candidates) {
      const response = await request(service, 'GET', `/api/v1/posts?limit=${encodeURIComponent(limit)}`)
      const inRange = /^\d+$/.test(limit) && !limit.startsWith('0') && Number(limit) >= 1 && Number(limit) <= 100
      assert.equal(limitPattern.test(limit), inRange, `the document admits ${JSON.stringify(limit)}: ${String(inRange)}`)
      assert.equal(response.status, inRange ? 200 : 400, `limit=${JSON.stringify(limit)}`)
      if (!inRange) {
        assert.equal(response.body.error.code, 'VALIDATION_FAILED')
        assert.equal(response.body.error.field, 'limit')
        assert.match(response.body.error.message, /limit must be an integer from 1 to 100/)
      }
    }
  })

  it('cursor: every cursor the service issues is valid for the document', async () => {
    const { body } = await registerUser(service)
    for (let i = 0; i < 4; i++) {
      assert.equal((await request(service, 'POST', '/api/v1/posts', { token: body.accessToken, body: { title: `post ${i}`, body: 'text' } })).status, 201)
    }
    const cursorPattern = queryPattern(document, 'cursor')
    let cursor: string | null = null
    let issued = 0
    do {
      const page: { status: number, body: { nextCursor: string | null } } = await request(service, 'GET', `/api/v1/posts?limit=1${cursor === null ? '' : `&cursor=${cursor}`}`)
      assert.equal(page.status, 200)
      cursor = page.body.nextCursor
      if (cursor !== null) {
        issued += 1
        assert.match(cursor, cursorPattern)
      }
    } while (cursor !== null)
    assert.ok(issued >= 3)
  })

  it('cursor: a schema-valid cursor gets a page (ids of 1 to 15 digits); one just outside gets 400', async () => {
    const cursorPattern = queryPattern(document, 'cursor')
    for (let digits = 1; digits <= 16; digits++) {
      const id = '987654321098765'.padEnd(digits, '4').slice(0, digits)
      const cursor = encodeCursor(id)
      assert.equal(cursorPattern.test(cursor), digits <= 15, `an id of ${digits} digits`)
      const response = await request(service, 'GET', `/api/v1/posts?cursor=${cursor}`)
      assert.equal(response.status, digits <= 15 ? 200 : 400, `an id of ${digits} digits`)
    }
    for (const cursor of [encodeCursor('12').slice(0, -1), encodeCursor('1') + 'A', `${encodeCursor('123')}=`, Buffer.from('p:1x').toString('base64url'), Buffer.from('q:12').toString('base64url'), 'bogus']) {
      assert.equal(cursorPattern.test(cursor), false, cursor)
      const response = await request(service, 'GET', `/api/v1/posts?cursor=${encodeURIComponent(cursor)}`)
      assert.equal(response.status, 400, cursor)
      assert.equal(response.body.error.field, 'cursor')
    }
  })

  it('cursor: the pattern admits exactly the issued cursors among all short base64url strings', () => {
    const cursorPattern = queryPattern(document, 'cursor')
    // The first 4-character group (`p:` and a digit) and every tail of 1 to 3 characters after it,
    // where the partial groups are spelt out: 64 + 64 + 64^2 + 64^3 strings.
    const texts: string[] = []
    for (const a of base64urlAlphabet) texts.push(`cDo${a}`, `cDow${a}`)
    for (const a of base64urlAlphabet) {
      for (const b of base64urlAlphabet) {
        texts.push(`cDo5${a}${b}`)
        for (const c of base64urlAlphabet) texts.push(`cDo1${a}${b}${c}`)
      }
    }
    let admitted = 0
    for (const text of texts) {
      const matches = cursorPattern.test(text)
      if (matches) admitted += 1
      assert.equal(matches, isIssuedCursor(text), text)
    }
    // The 10 first digits, 10 one-digit tails, 100 two-digit tails (a lone 5th character is never base64).
    assert.equal(admitted, 120)
  })
})
