import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { labRoutes } from '../../src/harness/lab-routes.js'
import { request, startTestService } from '../helpers/service.js'

describe('the harness\'s diagnostic routes', () => {
  it('do not exist in the app as production builds it', async () => {
    const service = await startTestService()
    try {
      const response = await request(service, 'POST', '/api/v1/lab/login?hash=noop', { body: { email: 'a@example.com', password: 'x' } })
      assert.equal(response.status, 404)
    } finally {
      await service.close()
    }
  })

  it('split login into lookup only, lookup + JWT, and the full path', async () => {
    const service = await startTestService({ harness: { strategy: 'tollbooth', shedding: true, apiRoutes: labRoutes } })
    try {
      const register = await request(service, 'POST', '/api/v1/auth/register', { body: { email: 'lab@example.com', password: 'lab password' } })
      assert.equal(register.status, 201)
      const hashesBefore = service.engine.stats().completed
      const noop = await request(service, 'POST', '/api/v1/lab/login?hash=noop', { body: { email: 'lab@example.com', password: 'wrong but unchecked' } })
      assert.equal(noop.status, 200)
      assert.equal(noop.body.accessToken, undefined)
      const jwt = await request(service, 'POST', '/api/v1/lab/login?hash=jwt-only', { body: { email: 'lab@example.com', password: 'unchecked' } })
      assert.equal(jwt.status, 200)
      assert.equal(typeof jwt.body.accessToken, 'string')
      assert.equal(service.engine.stats().completed, hashesBefore, 'no hash for noop and jwt-only')
      const full = await request(service, 'POST', '/api/v1/lab/login?hash=full', { body: { email: 'lab@example.com', password: 'lab password' } })
      assert.equal(full.status, 200)
      assert.equal(service.engine.stats().completed, hashesBefore + 1)
      const wrong = await request(service, 'POST', '/api/v1/lab/login?hash=full', { body: { email: 'lab@example.com', password: 'wrong' } })
      assert.equal(wrong.status, 401)
    } finally {
      await service.close()
    }
  })
})
