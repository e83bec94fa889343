/** A fake cgroup filesystem and /proc/self/cgroup in a scratch folder, for the CPU and memory budget tests. */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after } from 'node:test'

const scratch: string[] = []
after(() => { for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true }) })

/** `files` are relative to the cgroup root (`memory/memory.limit_in_bytes`, `app/cpu.max`), each written with a newline as the kernel does. */
export function fakeCgroupTree (procSelfCgroup: string, files: Record<string, string>): { cgroupRoot: string, procSelfCgroup: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-cgroup-'))
  scratch.push(dir)
  const cgroupRoot = path.join(dir, 'sys-fs-cgroup')
  fs.mkdirSync(cgroupRoot)
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(cgroupRoot, file)), { recursive: true })
    fs.writeFileSync(path.join(cgroupRoot, file), text + '\n')
  }
  fs.writeFileSync(path.join(dir, 'proc-self-cgroup'), procSelfCgroup)
  return { cgroupRoot, procSelfCgroup: path.join(dir, 'proc-self-cgroup') }
}
