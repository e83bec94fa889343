/**
 * Where the embedded PostgreSQL's binaries and cluster live when tollbooth runs as root. The
 * cluster then runs as the `postgres` user, which needs search permission on every parent of the
 * binaries and the cluster; a checkout in a private folder gives it neither. Rather than loosen
 * the user's folders, what it must reach goes to a root-owned folder it can reach:
 * - the binaries are copied once to /var/cache/tollbooth/postgres-<version>-<os>-<arch>
 *   (else /var/tmp/tollbooth/...);
 * - the cluster goes to /var/lib/tollbooth/clusters/<name>-<hash> (else /var/tmp/tollbooth/...),
 *   linked from the data folder as `pg`, so the next start finds it.
 * Each choice is logged. A base folder is used only when root owns it and no one else may write it.
 */
import { createHash } from 'node:crypto'
import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

export interface PostgresUser {
  uid: number
  gid: number
}

/** Base folders for copied binaries, in order of preference. */
const binaryCacheBases = ['/var/cache/tollbooth', '/var/tmp/tollbooth']
/** Base folders for relocated clusters, in order of preference. */
const clusterBases = ['/var/lib/tollbooth/clusters', '/var/tmp/tollbooth/clusters']

export function isRoot (): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0
}

function idOf (flag: '-u' | '-g', user: string): number | undefined {
  const result = spawnSync('id', [flag, user], { encoding: 'utf8' })
  const value = Number.parseInt(result.stdout ?? '', 10)
  return result.status === 0 && Number.isInteger(value) ? value : undefined
}

/** The `postgres` user, created (as a system user, with its group) when missing. */
export function ensurePostgresUser (log: (message: string) => void): PostgresUser {
  let uid = idOf('-u', 'postgres')
  if (uid === undefined) {
    log('creating the unprivileged "postgres" user that runs the embedded PostgreSQL (PostgreSQL refuses root)')
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' })
    } catch (err) {
      throw new Error('The embedded PostgreSQL must run as an unprivileged "postgres" user, and creating it failed (useradd); create it, or set DATABASE_URL', { cause: err })
    }
    uid = idOf('-u', 'postgres')
  }
  const gid = idOf('-g', 'postgres')
  if (uid === undefined || gid === undefined) throw new Error('could not find the uid and gid of the "postgres" user')
  return { uid, gid }
}

/** Whether `user` passes `test <flag> target`, run as that user the way PostgreSQL will run (uid and gid, no supplementary groups). */
function userCan (user: PostgresUser, flag: '-x' | '-r' | '-w', target: string): boolean {
  const result = spawnSync('/bin/sh', ['-c', `test ${flag} "$1"`, 'sh', target], { uid: user.uid, gid: user.gid, cwd: '/', stdio: 'ignore' })
  return result.status === 0
}

/** Creates `dir` (and parents) when missing; true when it is a real folder owned by root that no one else may write. */
function safeRootFolder (dir: string): boolean {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 })
    const stat = fs.lstatSync(dir)
    if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) return false
    // Its parents too (a base like /var/tmp/tollbooth sits in a sticky world-writable folder, which is fine).
    for (let parent = path.dirname(dir); parent !== path.dirname(parent); parent = path.dirname(parent)) {
      const parentStat = fs.statSync(parent)
      if (parentStat.uid !== 0 || ((parentStat.mode & 0o002) !== 0 && (parentStat.mode & 0o1000) === 0)) return false
    }
    return true
  } catch {
    return false
  }
}

export interface BinaryPlacement {
  /** The folder with bin/, lib/ and share/ that the postgres user can run from. */
  nativeDir: string
  /** Set when the binaries were copied (or a copy reused) because `source` is out of the user's reach. */
  copiedFrom?: string
}

/** The binaries' folder, or a copy the postgres user can reach; `label` names the copy, so a new version gets its own. */
export function placeBinaries (nativeDir: string, label: string, user: PostgresUser, bases: readonly string[] = binaryCacheBases): BinaryPlacement {
  if (userCan(user, '-x', path.join(nativeDir, 'bin', 'postgres'))) return { nativeDir }
  const complete = '.tollbooth-copy-complete'
  for (const base of bases) {
    if (!safeRootFolder(base)) continue
    const target = path.join(base, label)
    if (!fs.existsSync(path.join(target, complete))) {
      const staging = `${target}.partial-${process.pid}`
      fs.rmSync(staging, { recursive: true, force: true })
      fs.cpSync(nativeDir, staging, { recursive: true, verbatimSymlinks: true })
      // Readable and runnable by everyone whatever the umask was; writable by root alone.
      execFileSync('chmod', ['-R', 'u+rwX,go+rX,go-w', staging])
      fs.writeFileSync(path.join(staging, complete), `copied from ${nativeDir}\n`, { mode: 0o644 })
      try {
        fs.renameSync(staging, target)
      } catch {
        // Another start copied it at the same time (or an incomplete copy is in the way).
        fs.rmSync(staging, { recursive: true, force: true })
        if (!fs.existsSync(path.join(target, complete))) {
          fs.rmSync(target, { recursive: true, force: true })
          continue
        }
      }
    }
    if (userCan(user, '-x', path.join(target, 'bin', 'postgres'))) return { nativeDir: target, copiedFrom: nativeDir }
  }
  throw new Error(`The embedded PostgreSQL runs as the unprivileged "postgres" user, who cannot reach its binaries in ${nativeDir}, and no copy could be made in ${bases.join(' or ')}. Set DATABASE_URL, or install tollbooth under a folder other users can traverse.`)
}

export interface ClusterPlacement {
  /** The cluster folder PostgreSQL is given (-D). */
  clusterDir: string
  /** Set when the cluster lives elsewhere than requested; `requested` is then a symbolic link to it. */
  relocatedFrom?: string
}

/** The stable folder name of a relocated cluster: the data folder's name and a hash of its path. */
function relocatedName (requested: string): string {
  const hash = createHash('sha256').update(path.resolve(requested)).digest('hex').slice(0, 12)
  const name = path.basename(path.dirname(path.resolve(requested))).replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '') || 'data'
  return `${name}-${hash}`
}

/** The cluster folder: `requested` when the postgres user can reach its parent, else one it can, linked from `requested`. */
export function placeCluster (requested: string, user: PostgresUser, bases: readonly string[] = clusterBases): ClusterPlacement {
  requested = path.resolve(requested)
  const existing = fs.lstatSync(requested, { throwIfNoEntry: false })
  if (existing?.isSymbolicLink() === true) {
    // An earlier start relocated it: keep using the target while it is there and reachable.
    const target = fs.readlinkSync(requested)
    const resolved = path.resolve(path.dirname(requested), target)
    if (fs.existsSync(resolved) && userCan(user, '-x', path.dirname(resolved))) return { clusterDir: resolved, relocatedFrom: requested }
    fs.unlinkSync(requested) // its target was removed (a cleaned /var/tmp): make a new one below
  } else if (userCan(user, '-x', path.dirname(requested))) {
    return { clusterDir: requested }
  } else if (existing !== undefined) {
    // A folder the postgres user could never use: an empty one (a failed earlier start) goes.
    if (!existing.isDirectory() || fs.readdirSync(requested).length > 0) {
      throw new Error(`The embedded PostgreSQL runs as the unprivileged "postgres" user, who cannot reach ${requested}, and that folder is not empty: move it away, or set TOLLBOOTH_DATA_DIR to a folder other users can traverse.`)
    }
    fs.rmdirSync(requested)
  }
  for (const base of bases) {
    if (!safeRootFolder(base)) continue
    const target = path.join(base, relocatedName(requested))
    try {
      fs.mkdirSync(target, { recursive: true, mode: 0o700 })
      const stat = fs.lstatSync(target)
      if (!stat.isDirectory() || (stat.uid !== 0 && stat.uid !== user.uid)) continue
    } catch {
      continue
    }
    if (!userCan(user, '-x', base)) continue
    fs.symlinkSync(target, requested)
    return { clusterDir: target, relocatedFrom: requested }
  }
  throw new Error(`The embedded PostgreSQL runs as the unprivileged "postgres" user, who cannot reach ${requested}, and no folder it can reach could be made in ${bases.join(' or ')}. Set TOLLBOOTH_DATA_DIR to a folder whose parents other users can traverse (e.g. under /var/tmp), or set DATABASE_URL.`)
}
