/**
 * `libuv` and `libuv-128`: the native async functions (`@node-rs/bcrypt`'s and
 * `@node-rs/argon2`'s promises, `crypto.scrypt`), which queue on libuv's shared
 * thread pool: 4 threads by default, 128 with UV_THREADPOOL_SIZE=128 (which the
 * launcher puts in the environment before node starts). File I/O, dns.lookup and
 * other crypto share those threads: the pool-starvation article.
 */
import { scrypt, timingSafeEqual, randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { hash as argon2Hash, verify as argon2Verify, type Algorithm, type Version } from '@node-rs/argon2'
import { hash as bcryptHash, verify as bcryptVerify } from '@node-rs/bcrypt'
import { createError, isTollboothError } from '../../errors.js'
import {
  bcryptMaxPasswordBytes, bcryptPasswordTooLong, formatScrypt, hasherFor, parseScrypt, scryptMaxmemBytes,
  type HashFaultLog, type HashReply, type HashTask, type ScryptParams,
} from '../../hashing/index.js'
import { CountingExecutor } from './counting-executor.js'

const argon2id = 2 as Algorithm.Argon2id
const version0x13 = 1 as Version.V0x13

async function scryptAsync (password: string, salt: Buffer, keyBytes: number, params: ScryptParams): Promise<Buffer> {
  return await new Promise((resolve, reject) => {
    scrypt(password, salt, keyBytes, { N: params.N, r: params.r, p: params.p, maxmem: scryptMaxmemBytes(params) }, (err, key) => {
      if (err !== null) reject(err)
      else resolve(key)
    })
  })
}

async function executeOnLibuv (task: HashTask): Promise<string | boolean | null> {
  switch (task.kind) {
    case 'ping': return null
    case 'verify': {
      const algorithm = hasherFor(task.stored).algorithm
      if (algorithm === 'argon2id') return await argon2Verify(task.stored, task.password)
      if (algorithm === 'bcrypt') {
        // As the worker threads do (bcrypt.ts): a password bcrypt would cut still costs a verify, then fails.
        if (!bcryptPasswordTooLong(task.password)) return await bcryptVerify(task.password, task.stored)
        await bcryptVerify(Buffer.from(task.password, 'utf8').subarray(0, bcryptMaxPasswordBytes), task.stored)
        return false
      }
      const { params, salt, hash } = parseScrypt(task.stored)
      return timingSafeEqual(await scryptAsync(task.password, salt, hash.length, params), hash)
    }
    case 'hash':
      switch (task.algorithm) {
        case 'argon2id':
          return await argon2Hash(task.password, { algorithm: argon2id, version: version0x13, memoryCost: task.params.memoryKiB, timeCost: task.params.timeCost, parallelism: task.params.parallelism, outputLen: 32 })
        case 'bcrypt':
          if (bcryptPasswordTooLong(task.password)) throw createError('PASSWORD_TOO_LONG')
          return await bcryptHash(task.password, task.params.cost)
        case 'scrypt': {
          const salt = randomBytes(16)
          return formatScrypt({ params: task.params, salt, hash: await scryptAsync(task.password, salt, 32, task.params) })
        }
      }
  }
}

export class LibuvExecutor extends CountingExecutor {
  readonly strategy: 'libuv' | 'libuv-128'
  readonly threads: number

  constructor (strategy: 'libuv' | 'libuv-128', log?: HashFaultLog) {
    super(log)
    this.strategy = strategy
    // What libuv will use: the variable is read once, when the pool first starts.
    this.threads = Number.parseInt(process.env.UV_THREADPOOL_SIZE ?? '4', 10) || 4
  }

  protected async execute (task: HashTask): Promise<HashReply> {
    // Wall time includes libuv's queue: from here the two cannot be told apart (the article's point).
    const started = performance.now()
    try {
      const value = await executeOnLibuv(task)
      return { ok: true, value, runMs: performance.now() - started }
    } catch (err) {
      const runMs = performance.now() - started
      if (isTollboothError(err)) return { ok: false, code: err.code, message: err.message, runMs }
      return { ok: false, code: 'INTERNAL', message: err instanceof Error ? err.message : String(err), runMs }
    }
  }

  protected async shutdown (): Promise<void> {}
}
