/**
 * Loaded with `node --import`: records the URL of every module the process resolves (its main
 * thread's loader) in the file TOLLBOOTH_MODULE_LOG names, one a line. What a process really
 * loaded, for tests that check what production never loads.
 */
import { register } from 'node:module'

register('./record-modules-hooks.js', import.meta.url)
