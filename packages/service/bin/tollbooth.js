#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (`npm run build`).
try {
  // glibc reads its malloc settings for hashing only when a process starts: where they are
  // missing, node starts again with them before the CLI loads (src/process/malloc-reexec.ts).
  const { startWithHashMallocEnv } = await import('../dist/src/process/malloc-reexec.js')
  if (startWithHashMallocEnv() === 'run here') await import('../dist/src/cli/main.js')
} catch (err) {
  // dist/ is what `npm run build` makes (`npm ci` at the root runs it): say so, not a stack.
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !/\/dist\/src\/(process\/malloc-reexec|cli\/main)\.js/.test(String(err.message))) throw err
  process.stderr.write('tollbooth: not built yet (dist/src/cli/main.js is missing): run `npm run build` at the repository root (`npm ci` there builds too), then try again.\n')
  process.exit(1)
}
