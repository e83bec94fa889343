/** What /proc says of a test's child processes: their children, and their listening descriptors (Linux). */
import assert from 'node:assert/strict'
import fs from 'node:fs'

/** Process ids whose parent is `pid`. */
export function childPids (pid: number): number[] {
  return fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] === String(pid) ? [Number(entry)] : []
    } catch {
      return []
    }
  })
}

/** How many of `pid`'s descriptors are the socket listening on 127.0.0.1:`port` (from /proc/net/tcp and /proc/<pid>/fd). */
export function listeningDescriptors (pid: number, port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`
  // Columns: sl local_address rem_address st ... inode (the tenth); st 0A is LISTEN.
  const row = fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').map((line) => line.trim().split(/\s+/)).find((fields) => fields[1] === local && fields[3] === '0A')
  assert.ok(row !== undefined, `a socket listening on ${local}`)
  const socket = `socket:[${row[9] ?? ''}]`
  return fs.readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try { return fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === socket } catch { return false }
  }).length
}
