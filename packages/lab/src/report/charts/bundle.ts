/**
 * The report page's own script, made from the compiled chart modules themselves: every exported
 * function as source text, then one call. The same functions build the charts in Node (tests,
 * the chart plan) and in the page, so they cannot drift apart, and they are type-checked and
 * linted like the rest of the code.
 */
import * as format from '../format.js'
import * as common from './common.js'
import * as compare from './compare.js'
import * as draw from './draw.js'
import * as knee from './knee.js'
import * as time from './time.js'

const shippedModules: Array<Record<string, unknown>> = [format, common, time, knee, compare, draw]

/** Source of a script that defines every shipped function and draws the page's charts. */
export function chartScriptSource (): string {
  const seen = new Set<string>()
  const sources = shippedModules.flatMap((module) => Object.entries(module)).map(([name, value]) => {
    const source = typeof value === 'function' ? value.toString() : ''
    // A const, class or arrow function would not survive the trip as a declaration.
    if (!source.startsWith(`function ${name}`)) throw new Error(`chart module export ${name} is not a plain function declaration`)
    if (seen.has(name)) throw new Error(`two chart modules export ${name}`)
    seen.add(name)
    return source
  })
  return `(() => {\n'use strict';\n${sources.join('\n')}\ndrawCharts(document, Chart);\n})();\n`
}
