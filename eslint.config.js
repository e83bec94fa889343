// Lint: neostandard (the style Fastify, pino and undici use) with TypeScript, plus bans whose
// message names the right API (the hashing rules keep slow work off the event loop and libuv's pool).
import neostandard from 'neostandard'

const hashOnEventLoop = 'Password hashing runs only in src/hashing worker threads: call the PasswordEngine instead.'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'node_modules/**', '.tollbooth/**', 'lab-results/**', 'examples/k6/**'] }),
  {
    rules: {
      // `void promise` marks a deliberately floating promise.
      'no-void': ['error', { allowAsStatement: true }],
    },
  },
  {
    // prom-client metrics register themselves in the registry their constructor is given.
    files: ['src/server/metrics.ts'],
    rules: { 'no-new': 'off' },
  },
  {
    // TypeBox's idiom: a schema and its static type share one name.
    files: ['src/server/schemas.ts'],
    rules: { '@typescript-eslint/no-redeclare': 'off' },
  },
  {
    files: ['src/server/**/*.ts', 'src/db/**/*.ts', 'src/lab/**/*.ts', 'src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          { name: '@node-rs/bcrypt', message: hashOnEventLoop },
          { name: '@node-rs/argon2', message: hashOnEventLoop },
          { name: 'bcrypt', message: hashOnEventLoop },
          { name: 'bcryptjs', message: hashOnEventLoop },
        ],
      }],
      'no-restricted-syntax': ['error',
        { selector: 'CallExpression[callee.name=/^(scrypt|scryptSync|pbkdf2|pbkdf2Sync)$/]', message: hashOnEventLoop },
        { selector: 'CallExpression[callee.property.name=/^(scrypt|scryptSync|pbkdf2|pbkdf2Sync)$/]', message: hashOnEventLoop },
      ],
    },
  },
]
