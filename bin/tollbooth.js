#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (`npm run build`).

// The `libuv-128` strategy reproduces UV_THREADPOOL_SIZE=128 from the seed articles. libuv
// reads the variable once, when its pool first starts, so it is set here, before any import.
const argv = process.argv.slice(2)
const flagIndex = argv.findIndex((arg) => arg === '--hash-strategy' || arg.startsWith('--hash-strategy='))
const flagValue = flagIndex === -1 ? undefined : (argv[flagIndex].includes('=') ? argv[flagIndex].split('=')[1] : argv[flagIndex + 1])
if ((flagValue ?? process.env.TOLLBOOTH_HASH_STRATEGY) === 'libuv-128' && process.env.UV_THREADPOOL_SIZE === undefined) {
  process.env.UV_THREADPOOL_SIZE = '128'
}

await import('../dist/src/cli/main.js')
