/**
 * `npm test`: one real PostgreSQL for the whole run (the embedded one, or the
 * server at DATABASE_URL), then node's test runner over every package's
 * dist/test (packages/service, packages/lab). Each test file makes its own
 * database on that server, so files never share state.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDatabase, type LaunchedDatabase } from 'tollbooth/launcher'

/** The workspace root, from dist/scripts/. */
const workspaceRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const packages = ['service', 'lab']

function testFiles (dir: string): string[] {
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return testFiles(full)
    return entry.name.endsWith('.test.js') ? [full] : []
  }).sort()
}

async function main (): Promise<number> {
  const filters = process.argv.slice(2)
  let files = packages.flatMap((name) => testFiles(path.join(workspaceRoot, 'packages', name, 'dist', 'test')))
  if (filters.length > 0) files = files.filter((file) => filters.some((filter) => file.includes(filter)))
  if (files.length === 0) {
    process.stderr.write('no test files matched\n')
    return 1
  }

  let embedded: LaunchedDatabase | undefined
  let adminUrl = process.env.DATABASE_URL
  if (adminUrl === undefined || adminUrl === '') {
    process.stdout.write('# starting an embedded PostgreSQL for the tests\n')
    embedded = await startDatabase({ name: 'tollbooth_test_admin', label: 'test' })
    adminUrl = embedded.url
  } else {
    process.stdout.write('# using the PostgreSQL server at DATABASE_URL for the tests\n')
  }

  try {
    const child = spawn(process.execPath, ['--test', '--test-concurrency=1', ...files], {
      stdio: 'inherit',
      env: { ...process.env, TOLLBOOTH_TEST_ADMIN_DATABASE_URL: adminUrl, TOLLBOOTH_LOG_LEVEL: process.env.TOLLBOOTH_LOG_LEVEL ?? 'silent' },
    })
    return await new Promise<number>((resolve) => {
      child.on('exit', (code, signal) => { resolve(code ?? (signal === null ? 1 : 128)) })
    })
  } finally {
    await embedded?.stop()
  }
}

main().then((code) => { process.exitCode = code }, (err: unknown) => {
  process.stderr.write(`run-tests: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
