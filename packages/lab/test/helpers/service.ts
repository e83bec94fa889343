/**
 * A real tollbooth for the lab's tests, started as users start it: `tollbooth serve` through
 * the service package's launcher API (tollbooth/launcher), on a fresh database, with cheap
 * hashes and 2 hash threads. The lab's tests see the service only as the lab does: HTTP and
 * /metrics.
 */
import { seedServiceEnv } from '../../src/services/index.js'
import { startServe } from 'tollbooth/launcher'
import { createTestDatabase, type TestDatabase } from './database.js'

export interface TestService {
  url: string
  pid: number
  db: TestDatabase
  close (): Promise<void>
}

export interface TestServiceOptions {
  config?: { labDiagnostics?: boolean }
  /** More settings, as environment variables. */
  env?: Record<string, string>
}

/** Cheap parameters: functional tests must not wait on real-strength hashes. */
const cheapHashEnv: Record<string, string> = {
  TOLLBOOTH_HASH_ALGORITHM: 'argon2id',
  TOLLBOOTH_ARGON2_MEMORY_KIB: '1024',
  TOLLBOOTH_ARGON2_TIME_COST: '1',
  TOLLBOOTH_BCRYPT_COST: '4',
  TOLLBOOTH_SCRYPT_N: '1024',
}

/** The lab's registration settings (its setup registers accounts and signs in with them at once, from one address). */
const registrationEnv = Object.fromEntries(Object.entries(seedServiceEnv).filter(([name]) => name.startsWith('TOLLBOOTH_REGIST')))

export async function startTestService (options: TestServiceOptions = {}): Promise<TestService> {
  const db = await createTestDatabase()
  try {
    const service = await startServe({
      env: {
        ...process.env,
        ...cheapHashEnv,
        ...registrationEnv,
        TOLLBOOTH_HASH_THREADS: '2',
        // No shedding on event-loop delay unless a test asks for it: on a loaded machine the
        // service's loop is delayed by the machine, not by its load, and a phase of a few requests
        // would be refused whole.
        TOLLBOOTH_MAX_EVENT_LOOP_DELAY_MS: '0',
        TOLLBOOTH_LOG_LEVEL: 'warn',
        // Stopped when its test is done: no load balancer to drain for (the default drain is 5 s).
        TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0',
        ...options.env,
        HOST: '127.0.0.1',
        PORT: '0',
        DATABASE_URL: db.url,
        TOLLBOOTH_PUBLIC_URL: 'http://127.0.0.1',
        TOLLBOOTH_JWT_SECRET: 'test-secret-that-is-at-least-32-characters-long',
        TOLLBOOTH_KEY_ENCRYPTION_KEY: 'dGVzdCBrZXktZW5jcnlwdGlvbiBrZXksIDMyIGJ5dGU=',
      },
      ...(options.config?.labDiagnostics === true ? { harness: { labDiagnostics: true } } : {}),
    })
    return {
      url: service.url,
      pid: service.pid,
      db,
      async close () {
        await service.stop()
        await db.drop()
      },
    }
  } catch (err) {
    await db.drop()
    throw err
  }
}
