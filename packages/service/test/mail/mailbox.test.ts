/** The mailbox key the mail bounds count by: plus tags and dots of the local part folded, for every domain. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { mailboxKey } from '../../src/mail/mailbox.js'

describe('the mailbox an address reaches', () => {
  it('folds case, the +tag and the dots of the local part, for every domain', () => {
    for (const email of ['ab@x.com', 'ab+1@x.com', 'a.b@x.com', 'A.B+news@X.com', 'a.b+c.d+e@x.com']) assert.equal(mailboxKey(email), 'ab@x.com', email)
    assert.equal(mailboxKey('first.last+shop@mail.example.org'), 'firstlast@mail.example.org', 'any domain, its own dots kept')
  })

  it('keeps a local part that folding would empty, and text that is no address', () => {
    assert.equal(mailboxKey('+tag@x.com'), '+tag@x.com')
    assert.equal(mailboxKey('..@x.com'), '..@x.com')
    assert.equal(mailboxKey('no-at-sign'), 'no-at-sign')
  })
})
