import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { packageRoot } from '../../src/paths.js'

describe('`tollbooth` before the build', () => {
  it('says how to build instead of failing with ERR_MODULE_NOT_FOUND', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-unbuilt-'))
    try {
      fs.mkdirSync(path.join(root, 'bin'))
      fs.copyFileSync(path.join(packageRoot, 'bin', 'tollbooth.js'), path.join(root, 'bin', 'tollbooth.js'))
      fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'tollbooth', type: 'module' }))
      const result = spawnSync(process.execPath, [path.join(root, 'bin', 'tollbooth.js'), '--version'], { encoding: 'utf8' })
      assert.equal(result.status, 1)
      assert.match(result.stderr, /not built yet .*run `npm run build`/)
      assert.doesNotMatch(result.stderr, /ERR_MODULE_NOT_FOUND|at async/)
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})
