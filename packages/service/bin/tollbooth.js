#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (`npm run build`).
try {
  await import('../dist/src/cli/main.js')
} catch (err) {
  // dist/ is what `npm run build` makes (`npm ci` at the root runs it): say so, not a stack.
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('/dist/src/cli/main.js')) throw err
  process.stderr.write('tollbooth: not built yet (dist/src/cli/main.js is missing): run `npm run build` at the repository root (`npm ci` there builds too), then try again.\n')
  process.exit(1)
}
