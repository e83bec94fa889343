// `npm ci` / `npm install` at the root run this (the `prepare` script): it builds the workspace
// (`npm run build`: tsc -b and the lab's report page), so `npx tollbooth ...` works right after the install. Plain JavaScript, because it
// runs before anything is compiled. An install without the dev dependencies (a production
// image: `npm ci --omit=dev`) has no TypeScript: there is nothing to build then, and dist/
// comes from wherever the build ran, so the install goes on with a note.
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
let tsc
try {
  tsc = require.resolve('typescript/bin/tsc')
} catch {
  process.stderr.write('tollbooth prepare: TypeScript is not installed (a production install?): not building; dist/ must come from a build.\n')
  process.exit(0)
}
const result = spawnSync(process.execPath, [tsc, '-b'], { stdio: 'inherit' })
if (result.status === 0) {
  // The lab's report page: its own tsconfig (one AMD file for the browser), see packages/lab/src/report/index.ts.
  const page = spawnSync(process.execPath, [tsc, '-p', 'packages/lab/src/report/charts/tsconfig.page.json'], { stdio: 'inherit' })
  if (page.error !== undefined) throw page.error
  process.exit(page.status ?? 1)
}
if (result.error !== undefined) throw result.error
process.exit(result.status ?? 1)
