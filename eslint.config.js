// Lint: neostandard (the style Fastify, pino and undici use) with TypeScript, plus bans whose
// message names the right API (the hashing rules keep slow work off the event loop and libuv's pool).
import neostandard from 'neostandard'

const hashOnEventLoop = 'Password hashing runs only in the service\'s src/hashing worker threads: call the PasswordEngine instead.'
const labThroughHttp = 'The lab talks to the service through HTTP, /metrics, tollbooth/launcher and tollbooth/software-authenticator only (docs/reference/launcher.md).'
// Rules of one name replace each other in flat config: the lab's ban repeats these, so they are one list.
const hashLibraries = ['@node-rs/bcrypt', '@node-rs/argon2', 'bcrypt', 'bcryptjs'].map((name) => ({ name, message: hashOnEventLoop }))

export default [
  ...neostandard({ ts: true, ignores: ['**/dist/**', '**/node_modules/**', '**/.tollbooth/**', '**/lab-results/**', 'examples/k6/**'] }),
  {
    rules: {
      // `void promise` marks a deliberately floating promise.
      'no-void': ['error', { allowAsStatement: true }],
    },
  },
  {
    // prom-client metrics register themselves in the registry their constructor is given.
    files: ['packages/service/src/metrics/metrics.ts'],
    rules: { 'no-new': 'off' },
  },
  {
    // The pages' scripts run in the browser as written (no build step): its globals, none of Node's.
    files: ['packages/service/src/http/pages/*.browser.js'],
    languageOptions: {
      sourceType: 'module',
      globals: { window: 'readonly', URL: 'readonly', document: 'readonly', fetch: 'readonly', navigator: 'readonly', atob: 'readonly', PublicKeyCredential: 'readonly', DOMException: 'readonly', HTMLFormElement: 'readonly', history: 'readonly', location: 'readonly', URLSearchParams: 'readonly' },
    },
  },
  {
    // TypeBox's idiom: a schema and its static type share one name.
    files: ['packages/service/src/http/schemas.ts'],
    rules: { '@typescript-eslint/no-redeclare': 'off' },
  },
  {
    files: ['packages/service/src/http/**/*.ts', 'packages/service/src/overload/**/*.ts', 'packages/service/src/accounts/**/*.ts', 'packages/service/src/process/**/*.ts', 'packages/service/src/metrics/**/*.ts', 'packages/service/src/keys/**/*.ts', 'packages/service/src/mail/**/*.ts', 'packages/service/src/db/**/*.ts', 'packages/service/src/cli/**/*.ts', 'packages/lab/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: hashLibraries,
      }],
      'no-restricted-syntax': ['error',
        { selector: 'CallExpression[callee.name=/^(scrypt|scryptSync|pbkdf2|pbkdf2Sync)$/]', message: hashOnEventLoop },
        { selector: 'CallExpression[callee.property.name=/^(scrypt|scryptSync|pbkdf2|pbkdf2Sync)$/]', message: hashOnEventLoop },
      ],
    },
  },
  {
    // The lab is a client of the service: no service internals, no database driver.
    files: ['packages/lab/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          ...hashLibraries,
          { name: 'pg', message: labThroughHttp },
          { name: 'tollbooth', message: labThroughHttp },
        ],
        patterns: [
          { group: ['**/service/**', '**/src/hashing/**', '**/src/db/**', '**/src/http/**', '**/src/overload/**', '**/src/accounts/**', '**/src/process/**'], message: labThroughHttp },
          { regex: '^tollbooth/(?!(launcher|software-authenticator)$)', message: labThroughHttp },
        ],
      }],
    },
  },
]
