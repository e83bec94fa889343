/**
 * `tollbooth` started without glibc's malloc settings for hashing starts node again with them
 * (src/process/malloc-reexec.ts): in place where node has process.execve, else as a child that
 * stands in for it (src/process/child-relay.ts); never when they are set or turned off. Checked
 * from /proc: the environment the serving process started with, its children, and the page
 * faults its hash thread takes per scrypt login.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { glibcTakesHashMallocEnv, hashMallocEnv, runtimeGlibcVersion } from '../../src/machine/malloc-env.js'
import { reexecEnv } from '../../src/process/malloc-reexec.js'
import { withServiceV8Flags } from '../../src/machine/v8-flags.js'
import { startCli, stopCli, type StartedCli } from '../helpers/cli.js'
import { childPids } from '../helpers/processes.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { registerUser, request, serveEnv } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures')
const mmapThreshold = 'MALLOC_MMAP_THRESHOLD_'
const trimThreshold = 'MALLOC_TRIM_THRESHOLD_'

/** `extra` on a test service's environment, without the settings unless `extra` sets them. */
function envWithout (databaseUrl: string, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env = serveEnv(databaseUrl, {})
  for (const name of Object.keys(hashMallocEnv)) Reflect.deleteProperty(env, name)
  return { ...env, ...extra }
}

/** The environment `pid` started with (what glibc read), as a record. */
function startEnvironment (pid: number): Record<string, string> {
  return Object.fromEntries(fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter((entry) => entry.includes('=')).map((entry) => {
    const at = entry.indexOf('=')
    return [entry.slice(0, at), entry.slice(at + 1)]
  }))
}

/** The arguments `pid` was started with (node's own flags first). */
function commandLine (pid: number): string[] {
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((arg) => arg !== '')
}

/** Fields of /proc/<pid>/stat after the command's name: [0] state, [1] ppid, [2] pgrp, [3] session, [7] minor faults. */
function statFields (pid: number): string[] {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

const isReexecLine = (line: Record<string, unknown>): boolean => String(line.msg).startsWith('malloc settings for hashing applied')
const isHint = (line: Record<string, unknown>): boolean => String(line.msg).startsWith('glibc malloc maps a large scrypt buffer afresh')

describe('reexecEnv: the environment node starts again with', () => {
  const marker = 'TOLLBOOTH_MALLOC_REEXECUTED'

  it('adds only the settings missing, keeps the operator\'s own, says how and which in its marker, and is nothing where glibc does not take them', () => {
    const fresh = reexecEnv({ PORT: '1' }, ['serve'], 'execve', '2.36')
    assert.deepEqual(fresh, { PORT: '1', ...hashMallocEnv, [marker]: `execve:${mmapThreshold},${trimThreshold}` })
    const operators = reexecEnv({ [trimThreshold]: '268435456' }, ['serve'], 'child process', '2.36')
    assert.deepEqual(operators, { [trimThreshold]: '268435456', [mmapThreshold]: hashMallocEnv[mmapThreshold], [marker]: `child process:${mmapThreshold}` }, 'the operator\'s value kept')
    assert.equal(reexecEnv({ ...hashMallocEnv }, ['serve'], 'execve', '2.36'), undefined, 'nothing missing')
    assert.equal(reexecEnv({ [mmapThreshold]: '', [trimThreshold]: '' }, ['serve'], 'execve', '2.36'), undefined, 'set, even empty, is the operator\'s')
    assert.equal(reexecEnv({}, ['serve'], 'execve', '2.34'), undefined, 'glibc before 2.35')
    assert.equal(reexecEnv({}, ['serve'], 'execve', null), undefined, 'musl, macOS')
  })

  it('is nothing when the operator turns it off, by the variable or the flag (the flag wins)', () => {
    assert.equal(reexecEnv({ TOLLBOOTH_MALLOC_SETTINGS: 'off' }, ['serve'], 'execve', '2.36'), undefined)
    assert.equal(reexecEnv({}, ['serve', '--port', '0', '--malloc-settings', 'off'], 'execve', '2.36'), undefined)
    assert.equal(reexecEnv({}, ['serve', '--malloc-settings=off'], 'execve', '2.36'), undefined)
    assert.notEqual(reexecEnv({ TOLLBOOTH_MALLOC_SETTINGS: 'off' }, ['serve', '--malloc-settings', 'auto'], 'execve', '2.36'), undefined)
    assert.notEqual(reexecEnv({ TOLLBOOTH_MALLOC_SETTINGS: 'auto' }, ['serve'], 'execve', '2.36'), undefined)
    // A value `serve` will refuse is its configuration's to report: node starts again and `serve` says what is wrong.
    assert.notEqual(reexecEnv({ TOLLBOOTH_MALLOC_SETTINGS: 'of' }, ['serve'], 'execve', '2.36'), undefined)
  })

  it('never re-executes a re-execution, even one that lost the settings on the way', () => {
    const again = reexecEnv({ PORT: '1' }, ['serve'], 'execve', '2.36')
    assert.ok(again !== undefined)
    assert.equal(reexecEnv(again, ['serve'], 'execve', '2.36'), undefined)
    for (const name of Object.keys(hashMallocEnv)) Reflect.deleteProperty(again, name)
    assert.equal(reexecEnv(again, ['serve'], 'execve', '2.36'), undefined)
  })
})

describe('the relay where node cannot replace itself', () => {
  /** The relay fixture with `childCode` as its child, in a process group of its own (as a terminal's foreground job). */
  function startRelay (childCode: string): ReturnType<typeof spawn> {
    return spawn(process.execPath, [path.join(fixtures, 'relay.js'), childCode], { stdio: ['ignore', 'pipe', 'inherit'], detached: true })
  }

  it('ends with the child\'s exit code, or killed by the child\'s signal', () => {
    const exited = spawnSync(process.execPath, [path.join(fixtures, 'relay.js'), 'process.exit(7)'])
    assert.equal(exited.status, 7)
    const killed = spawnSync(process.execPath, [path.join(fixtures, 'relay.js'), 'process.kill(process.pid, "SIGKILL")'])
    assert.equal(killed.signal, 'SIGKILL')
  })

  it('passes a Ctrl-C to the child once: the child is in a session of its own, which the terminal\'s signal does not reach', async () => {
    const relay = startRelay('process.on("SIGINT", () => { console.log("SIGINT") }); console.log("pid " + process.pid); setInterval(() => {}, 60_000)')
    let output = ''
    relay.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
    const exit = once(relay, 'exit')
    try {
      await waitFor('the child\'s pid', () => /pid \d+\n/.test(output))
      const childPid = Number(/pid (\d+)/.exec(output)?.[1])
      const relayPid = relay.pid ?? 0
      assert.equal(statFields(childPid)[1], String(relayPid), 'the relay\'s child')
      assert.equal(statFields(childPid)[3], String(childPid), 'leads a session of its own')
      assert.notEqual(statFields(childPid)[2], statFields(relayPid)[2], 'outside the relay\'s process group')
      // What a terminal does on Ctrl-C: SIGINT to every process of the foreground group.
      process.kill(-relayPid, 'SIGINT')
      await waitFor('the child\'s SIGINT', () => output.includes('SIGINT\n'))
      // The child's handler keeps it alive: a SIGTERM, relayed too, ends it.
      relay.kill('SIGTERM')
      const [code, signal] = await exit as [number | null, NodeJS.Signals | null]
      assert.equal(output.match(/SIGINT/g)?.length, 1)
      assert.deepEqual({ code, signal }, { code: null, signal: 'SIGTERM' }, 'the child ended by SIGTERM, and so did the relay')
    } finally {
      if (relay.exitCode === null && relay.signalCode === null) process.kill(-(relay.pid ?? 0), 'SIGKILL')
    }
  })
})

const glibc = runtimeGlibcVersion()
/** This node replaces itself (Node.js 22.15 and later); before, the `tollbooth` command runs as a child of itself. */
const hasExecve = typeof process.execve === 'function'

describe('`tollbooth serve` and glibc\'s malloc settings', { skip: !glibcTakesHashMallocEnv(glibc) && `glibc ${glibc ?? 'absent'} does not take them: nothing to re-execute for` }, () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase() })
  after(async () => { await database.drop() })

  it(`started without them: node starts again with them once (${hasExecve ? 'in place, same pid' : 'as a child: this node has no process.execve'}), says so once, its hash thread keeps its scrypt buffer, and SIGTERM ends it with 0`, async () => {
    // better-auth's scrypt (32 MiB a hash) on one hash thread: each login's verify runs on the same thread.
    const env = envWithout(database.url, { TOLLBOOTH_HASH_ALGORITHM: 'scrypt', TOLLBOOTH_SCRYPT_N: '16384', TOLLBOOTH_SCRYPT_R: '16', TOLLBOOTH_HASH_THREADS: '1' })
    const started = await startCli(env, ['serve'], 120_000)
    try {
      const startedPid = started.child.pid ?? 0
      const listening = started.lines().find((line) => line.msg === 'tollbooth is listening')
      const pid = Number(listening?.pid)
      if (hasExecve) {
        assert.equal(pid, startedPid, 'the process started is the one serving')
        assert.deepEqual(childPids(pid), [], 'and it started no other process')
      } else {
        assert.deepEqual(childPids(startedPid), [pid], 'one child serves for the process started')
        assert.deepEqual(childPids(pid), [], 'and it started no other process')
      }
      const environment = startEnvironment(pid)
      for (const [name, value] of Object.entries(hashMallocEnv)) assert.equal(environment[name], value, `${name} in the environment it started with`)
      assert.equal(environment.TOLLBOOTH_MALLOC_REEXECUTED, `${hasExecve ? 'execve' : 'child process'}:${mmapThreshold},${trimThreshold}`, 'started again once, by the `tollbooth` command')
      for (const flag of withServiceV8Flags([])) assert.ok(commandLine(pid).includes(flag), `and with the service's V8 flags this node takes: ${commandLine(pid).join(' ')}`)
      const reexecLines = started.lines().filter(isReexecLine)
      assert.equal(reexecLines.length, 1, 'one log line')
      assert.deepEqual({ by: reexecLines[0]?.by, applied: reexecLines[0]?.applied, kept: reexecLines[0]?.kept }, { by: hasExecve ? 'execve' : 'child process', applied: { ...hashMallocEnv }, kept: {} })
      assert.equal(started.lines().some(isHint), false, 'no hint that they are missing')
      assert.match(await (await fetch(`${started.url}/metrics`)).text(), /tollbooth_hash_pool_info\{[^}]*malloc_settings="set"/)

      // Without the settings each verify faults its 32 MiB in again (8,194 pages); with them, next to none.
      const user = await registerUser(started)
      const login = async (): Promise<void> => {
        const answer = await request(started, 'POST', '/api/v1/auth/login', { body: { email: user.email, password: user.password } })
        assert.equal(answer.status, 200, JSON.stringify(answer.body))
      }
      await login()
      // The best of three rounds of four logins: without the settings every round faults the buffer in
      // at each login; a round can also meet a hash thread started afresh (its first hash faults once).
      const rounds: number[] = []
      for (let round = 0; round < 3 && !rounds.some((faults) => faults < 2048); round++) {
        const faultsBefore = Number(statFields(pid)[7])
        const logins = 4
        for (let i = 0; i < logins; i++) await login()
        rounds.push((Number(statFields(pid)[7]) - faultsBefore) / logins)
      }
      assert.ok(Math.min(...rounds) < 2048, `page faults a login, by round: ${rounds.join(', ')}: the hash thread reuses its buffer`)
    } finally {
      assert.equal(await stopCli(started), 0)
    }
  })

  it('on a node without process.execve, runs as a child that keeps the operator\'s value, writes the ready file, and passes SIGTERM and the exit code', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-reexec-'))
    const readyFile = path.join(dir, 'ready.json')
    const operatorsTrim = '268435456'
    let started: StartedCli | undefined
    try {
      started = await startCli(envWithout(database.url, { [trimThreshold]: operatorsTrim }), ['serve', '--ready-file', readyFile], 120_000, path.join(fixtures, 'tollbooth-without-execve.js'))
      const relayPid = started.child.pid ?? 0
      await waitFor('the ready file', () => fs.existsSync(readyFile))
      const ready = JSON.parse(fs.readFileSync(readyFile, 'utf8')) as { pid: number, url: string }
      assert.equal(ready.url, started.url)
      assert.deepEqual(childPids(relayPid), [ready.pid], 'one child serves for the process started')
      const environment = startEnvironment(ready.pid)
      assert.equal(environment[mmapThreshold], hashMallocEnv[mmapThreshold])
      assert.equal(environment[trimThreshold], operatorsTrim, 'the operator\'s value kept')
      const reexecLines = started.lines().filter(isReexecLine)
      assert.equal(reexecLines.length, 1)
      assert.deepEqual({ by: reexecLines[0]?.by, applied: reexecLines[0]?.applied, kept: reexecLines[0]?.kept }, {
        by: 'child process',
        applied: { [mmapThreshold]: hashMallocEnv[mmapThreshold] },
        kept: { [trimThreshold]: operatorsTrim },
      })
      // SIGTERM to the process started: the service shuts down cleanly, and its 0 is the relay's.
      assert.equal(await stopCli(started), 0)
      assert.ok(started.lines().some((line) => line.msg === 'stopped' && line.pid === ready.pid), 'the service stopped cleanly')
      assert.throws(() => process.kill(ready.pid, 0), { code: 'ESRCH' }, 'the child is gone')
    } finally {
      if (started !== undefined) await stopCli(started)
      fs.rmSync(dir, { recursive: true, force: true })
    }
    // A refused configuration's exit code (2) comes through the relay too.
    const refused = spawnSync(process.execPath, [path.join(fixtures, 'tollbooth-without-execve.js'), 'serve', '--port', 'eighty'], { encoding: 'utf8', env: envWithout(database.url, {}) })
    assert.equal(refused.status, 2, refused.stderr)
    assert.match(refused.stderr, /--port/)
  })

  it('started with them already set: runs as it was started, with the operator\'s values', async () => {
    const operators = { [mmapThreshold]: String(96 * 1024 * 1024), [trimThreshold]: String(192 * 1024 * 1024) }
    const started = await startCli(envWithout(database.url, operators), ['serve'], 120_000)
    try {
      const pid = started.child.pid ?? 0
      assert.equal(started.lines().find((line) => line.msg === 'tollbooth is listening')?.pid, pid)
      const environment = startEnvironment(pid)
      assert.equal(environment.TOLLBOOTH_MALLOC_REEXECUTED, undefined, 'never started again')
      assert.deepEqual({ [mmapThreshold]: environment[mmapThreshold], [trimThreshold]: environment[trimThreshold] }, operators)
      assert.equal(started.lines().some(isReexecLine), false)
      assert.equal(started.lines().some(isHint), false)
      assert.deepEqual(childPids(pid), [])
    } finally {
      assert.equal(await stopCli(started), 0)
    }
  })

  it('turned off (--malloc-settings off): runs without them, as it was started, and says what they would save', async () => {
    const started = await startCli(envWithout(database.url, {}), ['serve', '--malloc-settings', 'off'], 120_000)
    try {
      const pid = started.child.pid ?? 0
      assert.equal(started.lines().find((line) => line.msg === 'tollbooth is listening')?.pid, pid)
      const environment = startEnvironment(pid)
      assert.equal(environment.TOLLBOOTH_MALLOC_REEXECUTED, undefined, 'never started again')
      for (const name of Object.keys(hashMallocEnv)) assert.equal(environment[name], undefined, `${name} not added`)
      assert.equal(started.lines().some(isReexecLine), false)
      // Written just after the "listening" line.
      await waitFor('the hint in the log', () => started.lines().some(isHint))
      const hint = started.lines().find(isHint)
      assert.deepEqual(hint?.missing, { ...hashMallocEnv }, 'the log names them')
      assert.match(String(hint?.msg), /TOLLBOOTH_MALLOC_SETTINGS=off/)
      assert.match(await (await fetch(`${started.url}/metrics`)).text(), /tollbooth_hash_pool_info\{[^}]*malloc_settings="missing"/)
    } finally {
      assert.equal(await stopCli(started), 0)
    }
  })
})
