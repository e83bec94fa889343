import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import { isTollboothError, type ErrorCode } from '../../src/errors.js'
import {
  acceptNewPassword,
  commonPasswordCount,
  commonPasswordsFile,
  isCommonPassword,
  parseCommonPasswords,
  passwordForms,
} from '../../src/accounts/password-policy.js'

function refusal (password: string): ErrorCode | undefined {
  try {
    acceptNewPassword(password)
    return undefined
  } catch (err) {
    assert.ok(isTollboothError(err), `a coded error, not ${String(err)}`)
    assert.equal(err.statusCode, 400)
    assert.equal(err.field, 'password')
    return err.code
  }
}

const composed = 'caf\u00e9 au lait 42'
const decomposed = 'cafe\u0301 au lait 42'

describe('acceptNewPassword', () => {
  it('returns the NFC form to hash, whichever form was typed', () => {
    assert.notEqual(composed, decomposed)
    assert.equal(acceptNewPassword(composed), composed)
    assert.equal(acceptNewPassword(decomposed), composed)
    // Compatibility forms are not folded: NFC, not NFKC (a ligature stays what the user typed).
    assert.equal(acceptNewPassword('\ufb01ve horses'), '\ufb01ve horses')
  })

  it('accepts an ordinary password as it is', () => {
    assert.equal(acceptNewPassword('correct horse battery staple'), 'correct horse battery staple')
  })

  it('refuses malformed UTF-16 (a lone surrogate, either half, or a pair in the wrong order)', () => {
    for (const password of ['\ud800abcdefgh', 'abcdefgh\udc00', 'abcd\udc00\ud800efgh', '\ud83d\ud83d\ud83d\ud83d\ud83d\ud83d\ud83d\ud83d']) {
      assert.equal(refusal(password), 'PASSWORD_MALFORMED', JSON.stringify(password))
    }
    // A real pair (an emoji) is well-formed.
    assert.equal(refusal('\ud83d\udd11 my own key phrase'), undefined)
  })

  it('refuses blank passwords: spaces, any white space, invisible format characters', () => {
    for (const password of [' '.repeat(8), '\t\n\r '.repeat(2), '\u00a0'.repeat(8), '\u3000'.repeat(8), '\u200b'.repeat(8), ' \ufeff'.repeat(4)]) {
      assert.equal(refusal(password), 'PASSWORD_BLANK', JSON.stringify(password))
    }
    // Spaces around something visible are a password like any other.
    assert.equal(refusal('   x    correct   '), undefined)
  })

  it('refuses the listed common passwords, in any case, compared after NFC', () => {
    for (const password of ['password', 'PASSWORD', 'Password1', 'password123', 'qwertyuiop', '12345678', 'iloveyou']) {
      assert.equal(refusal(password), 'PASSWORD_TOO_COMMON', password)
    }
    assert.equal(isCommonPassword('PassWord1'), true)
    assert.equal(isCommonPassword('correct horse battery staple'), false)
  })

  it('keeps the length rule on the normalised form (NFC can make a password shorter)', () => {
    // 8 code points as typed, 7 once each "e" + combining acute becomes one "é".
    const typed = 'e\u0301e\u0301e\u0301ab'
    assert.equal([...typed].length, 8)
    assert.equal(refusal(typed), 'VALIDATION_FAILED')
    // Counted in code points, as the schema counts: eight emoji are eight characters.
    assert.equal(refusal('\ud83d\udd11'.repeat(8)), undefined)
    assert.equal(refusal('a'.repeat(1025)), 'VALIDATION_FAILED')
    assert.equal(refusal('abcdefg'), 'VALIDATION_FAILED')
  })
})

describe('passwordForms', () => {
  it('is the NFC form alone for text already in NFC (ASCII: one verify)', () => {
    assert.deepEqual(passwordForms('plain ascii'), ['plain ascii'])
    assert.deepEqual(passwordForms(composed), [composed])
  })

  it('is the NFC form, then the text as typed, for text not in NFC', () => {
    assert.deepEqual(passwordForms(decomposed), [composed, decomposed])
  })

  it('refuses malformed UTF-16 before anything is verified', () => {
    assert.throws(() => passwordForms('\ud800x'), (err) => isTollboothError(err, 'PASSWORD_MALFORMED'))
  })
})

describe('the bundled common-password list', () => {
  const text = fs.readFileSync(commonPasswordsFile, 'utf8')

  it('names its source and licence in its header', () => {
    const header = text.slice(0, text.indexOf('\n\n'))
    assert.match(header, /SecLists/)
    assert.match(header, /[Ll]icen[cs]e/)
    assert.ok(header.split('\n').every((line) => line.startsWith('#')), 'the header is comment lines up to the first empty line')
  })

  it('holds 10,000 distinct entries the length rule would admit, lower-cased and in NFC', () => {
    const entries = text.slice(text.indexOf('\n\n') + 2).split('\n').filter((line) => line !== '')
    assert.equal(entries.length, 10_000)
    assert.equal(new Set(entries).size, 10_000)
    assert.equal(commonPasswordCount(), 10_000)
    for (const entry of entries) {
      assert.ok([...entry].length >= 8, `${entry} is at least 8 characters`)
      assert.equal(entry, entry.normalize('NFC').toLowerCase())
    }
  })

  it('parses: the header ends at the first empty line, entries compare lower-cased in NFC', () => {
    const parsed = parseCommonPasswords('# a header\n# #not-an-entry\n\n#hashtag1\nCAFE\u0301CAFE\u0301\r\nlast one\n')
    assert.deepEqual([...parsed], ['#hashtag1', 'caf\u00e9caf\u00e9', 'last one'])
  })
})
