/**
 * Whether the kernel groups processes by session before it shares the CPU (scheduler
 * autogroups, `kernel.sched_autogroup_enabled`). With them on, nice values count only inside one
 * session: the hash threads' nice 10 then yields to the event loop, PostgreSQL and a load
 * generator of the same session, but not to a process of another one, and a measurement shares
 * the CPU session by session. The lab records it with every result and warns when it is on.
 */
import fs from 'node:fs'

const autogroupSetting = '/proc/sys/kernel/sched_autogroup_enabled'

/** true or false as the kernel says; null where it does not say (not Linux, a kernel without them). */
export function schedulerAutogroups (file: string = autogroupSetting): boolean | null {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8').trim()
  } catch {
    return null
  }
  if (text === '1') return true
  if (text === '0') return false
  return null
}
