/** The command line's face for other entries (the lab's harness serves through it); bin/tollbooth.js runs main.ts. */
export { runServe } from './serve.js'
export { type ReadyInfo } from './ready-file.js'
