/**
 * `tollbooth lab` on the command line, end to end: the CLI as a child process against a real
 * tollbooth, started as users start it.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { type LabResult } from '../../src/result.js'
import { tollboothBin } from 'tollbooth/launcher'
import { startTestService, type TestService } from '../helpers/service.js'

let service: TestService
before(async () => { service = await startTestService() })
after(async () => { await service.close() })

describe('tollbooth lab on the command line', () => {
  const cli = async (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> => {
    const child = spawn(process.execPath, [tollboothBin, 'lab', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    return { code, stdout, stderr }
  }

  it('runs, prints the table and writes the reports; `lab report` renders them again from result.json', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-lab-cli-'))
    try {
      const { code, stdout, stderr } = await cli(['run', '--scenario', 'login-storm', '--target', service.url, '--duration', '1s', '--vus', '2', '--accounts', '2', '--out', dir, '--quiet'])
      assert.equal(code, 0, stderr)
      assert.match(stdout, /POST \/auth\/login/)
      assert.match(stdout, /wrote /)
      for (const name of ['result.json', 'seconds.csv', 'endpoints.csv', 'server.csv', 'report.html']) assert.ok(fs.existsSync(path.join(dir, name)), name)
      const result = JSON.parse(fs.readFileSync(path.join(dir, 'result.json'), 'utf8')) as LabResult
      assert.match(result.commandLine, /lab run --scenario login-storm/)

      const again = path.join(dir, 'again')
      const rendered = await cli(['report', path.join(dir, 'result.json'), '--out', again])
      assert.equal(rendered.code, 0, rendered.stderr)
      assert.equal(fs.readFileSync(path.join(again, 'seconds.csv'), 'utf8'), fs.readFileSync(path.join(dir, 'seconds.csv'), 'utf8'))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses bad flags with exit code 2 and a message naming them', async () => {
    // Three separate processes, started together: each is refused on its own.
    const [unknown, both, duration] = await Promise.all([
      cli(['run', '--scenario', 'nope']),
      cli(['run', '--scenario', 'login-storm', '--target', service.url, '--vus', '2', '--rate', '5']),
      cli(['knee', '--scenario', 'registration', '--step-duration', 'soon']),
    ])
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /unknown scenario "nope"/)
    assert.equal(both.code, 2)
    assert.match(both.stderr, /not both/)
    assert.equal(duration.code, 2)
    assert.match(duration.stderr, /--step-duration/)
  })
})
