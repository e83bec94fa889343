#!/usr/bin/env node
// Thin launcher: the compiled lab lives in dist/ (`npm run build` at the workspace root).
// `tollbooth-lab run ...` is the same as `tollbooth lab run ...`.
const { runLab } = await import('../dist/src/cli/index.js')
process.exitCode = await runLab(process.argv.slice(2))
