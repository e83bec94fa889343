/** A test service with the OpenID Connect provider on, its public URL naming its own port (the issuer must be exact). */
import { freePort, startTestService, type TestService, type TestServiceOptions } from './service.js'

export interface OidcTestService extends TestService {
  issuer: string
}

export async function startOidcService (options: TestServiceOptions = {}): Promise<OidcTestService> {
  const port = await freePort()
  const service = await startTestService({ ...options, port, config: { oidc: true, publicUrl: `http://127.0.0.1:${port}`, ...options.config } })
  return { ...service, issuer: `http://127.0.0.1:${port}/oidc` }
}
