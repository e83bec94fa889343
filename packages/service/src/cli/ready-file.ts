/**
 * `--ready-file`: once the service listens, it writes `{ url, adminUrl?, pid, version, strategy }`
 * as JSON to that path, so a program that started it (the launcher API, a script, a
 * supervisor) learns its URL without reading its logs. The file is written beside its
 * final name and renamed into place, so a reader never sees half of it; a file left by an
 * earlier run is removed at start.
 */
import fs from 'node:fs'
import path from 'node:path'

/** What the service writes to its ready file once it listens. */
export interface ReadyInfo {
  url: string
  /** The admin listener (TOLLBOOTH_ADMIN_PORT), where /metrics and the readiness details are; absent: they are on `url`. */
  adminUrl?: string
  /** The process that listens (with `libuv-128`, a child of the process started). */
  pid: number
  version: string
  strategy: string
}

export function clearReadyFile (file: string | undefined): void {
  if (file !== undefined) fs.rmSync(file, { force: true })
}

export function writeReadyFile (file: string | undefined, info: ReadyInfo): void {
  if (file === undefined) return
  const partial = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.partial`)
  fs.writeFileSync(partial, JSON.stringify(info) + '\n')
  fs.renameSync(partial, file)
}
