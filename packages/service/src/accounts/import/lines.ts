/**
 * The file's lines, one at a time, in bounded memory: the stream is read a chunk at a time (it
 * pauses while a line is handled), and a line longer than `maxLineBytes` is skipped to its end,
 * never held whole (readline would hold it all). Splitting bytes on `\n` is safe in UTF-8, where
 * that byte is never part of another character. A `\r` before the `\n` and a leading BOM go.
 */
export interface FileLine {
  /** From 1. */
  number: number
  /** Undefined when the line was longer than the bound. */
  text: string | undefined
}

const newline = 0x0a
const carriageReturn = 0x0d

function decode (bytes: Buffer, number: number): string {
  const end = bytes.length > 0 && bytes[bytes.length - 1] === carriageReturn ? bytes.length - 1 : bytes.length
  const text = bytes.toString('utf8', 0, end)
  return number === 1 && text.startsWith('\uFEFF') ? text.slice(1) : text
}

export async function * fileLines (input: AsyncIterable<Buffer | string>, maxLineBytes: number): AsyncGenerator<FileLine> {
  let number = 0
  let held: Buffer[] = []
  let heldBytes = 0
  let tooLong = false
  for await (const piece of input) {
    const chunk = typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece
    let start = 0
    for (;;) {
      const end = chunk.indexOf(newline, start)
      if (end === -1) break
      number += 1
      const part = chunk.subarray(start, end)
      if (tooLong || heldBytes + part.length > maxLineBytes) {
        yield { number, text: undefined }
      } else {
        yield { number, text: decode(heldBytes === 0 ? part : Buffer.concat([...held, part]), number) }
      }
      held = []
      heldBytes = 0
      tooLong = false
      start = end + 1
    }
    const rest = chunk.subarray(start)
    if (rest.length === 0 || tooLong) continue
    if (heldBytes + rest.length > maxLineBytes) {
      tooLong = true
      held = []
      heldBytes = 0
    } else {
      // A copy: the stream may reuse its chunk's memory.
      held.push(Buffer.from(rest))
      heldBytes += rest.length
    }
  }
  if (tooLong) yield { number: number + 1, text: undefined }
  else if (heldBytes > 0) yield { number: number + 1, text: decode(Buffer.concat(held), number + 1) }
}
