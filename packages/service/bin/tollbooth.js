#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (`npm run build`).

// The `libuv-128` strategy reproduces UV_THREADPOOL_SIZE=128 from the seed articles. libuv sizes
// its pool once, when it first starts, and Node's ES module loader has already started it to
// load this very file: setting the variable from here is too late (the pool stays at 4). So
// the launcher starts the service again in a fresh process with the variable set, as the
// articles did (`UV_THREADPOOL_SIZE=128 node main.js`), and relays signals and the exit code.
const argv = process.argv.slice(2)
const flagIndex = argv.findIndex((arg) => arg === '--hash-strategy' || arg.startsWith('--hash-strategy='))
const flagValue = flagIndex === -1 ? undefined : (argv[flagIndex].includes('=') ? argv[flagIndex].split('=')[1] : argv[flagIndex + 1])
const libuv128 = (flagValue ?? process.env.TOLLBOOTH_HASH_STRATEGY) === 'libuv-128' && argv[0] !== 'lab'

if (libuv128 && process.env.UV_THREADPOOL_SIZE === undefined) {
  const { spawn } = await import('node:child_process')
  const { fileURLToPath } = await import('node:url')
  // Its own process group: a Ctrl-C reaches this launcher only, which passes it on once.
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...argv], {
    stdio: 'inherit',
    env: { ...process.env, UV_THREADPOOL_SIZE: '128' },
    detached: true,
  })
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => { child.kill(signal) })
  child.on('exit', (code, signal) => { process.exit(code ?? (signal === null ? 1 : 128)) })
} else {
  try {
    await import('../dist/src/cli/main.js')
  } catch (err) {
    // dist/ is what `npm run build` makes (`npm ci` at the root runs it): say so, not a stack.
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('/dist/src/cli/main.js')) throw err
    process.stderr.write('tollbooth: not built yet (dist/src/cli/main.js is missing): run `npm run build` at the repository root (`npm ci` there builds too), then try again.\n')
    process.exit(1)
  }
}
