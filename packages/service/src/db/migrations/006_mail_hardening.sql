-- No live link at rest in the outbox. A mail with a link keeps its text with the link's place
-- marked `{link}`, the page it opens (link_url) and the hash its account token is stored under
-- (link_token_hash): a random stand-in until the dispatcher's send makes the token, stores its
-- SHA-256 there and in account_tokens, and fills the link in (src/mail/dispatcher.ts).
-- 'skipped': the link was used or expired before the send, so there was nothing left to send.
ALTER TABLE mail_outbox ADD COLUMN link_url text CHECK (length(link_url) <= 2000);
ALTER TABLE mail_outbox ADD COLUMN link_token_hash bytea CHECK (length(link_token_hash) = 32);
ALTER TABLE mail_outbox ADD CONSTRAINT mail_outbox_link_check CHECK ((link_url IS NULL) = (link_token_hash IS NULL));
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_status_check;
ALTER TABLE mail_outbox ADD CONSTRAINT mail_outbox_status_check CHECK (status IN ('pending', 'sent', 'logged', 'failed', 'skipped'));

-- Mails still pending hold their link in their text: the token moves out (its hash is the one
-- account_tokens holds; the first send replaces the token), the text keeps the link's place.
UPDATE mail_outbox SET
    link_url = substring(body_text FROM '(https?://[^\s?#]+)\?token=[A-Za-z0-9_-]+'),
    link_token_hash = sha256(convert_to(substring(body_text FROM '\?token=([A-Za-z0-9_-]+)'), 'UTF8')),
    body_text = regexp_replace(body_text, 'https?://[^\s?#]+\?token=[A-Za-z0-9_-]+', '{link}')
  WHERE status = 'pending' AND kind IN ('verify_email', 'password_reset')
    AND body_text ~ 'https?://[^\s?#]+\?token=[A-Za-z0-9_-]+';
-- Mails no longer pending keep no text (development logged some with their links).
UPDATE mail_outbox SET body_text = NULL WHERE status <> 'pending' AND body_text IS NOT NULL;

-- Account mails counted per mailbox too: the address folded (src/mail/mailbox.ts), so that
-- plus-addressed and dotted variants of one mailbox share one bound.
ALTER TABLE mail_requests DROP CONSTRAINT mail_requests_scope_check;
ALTER TABLE mail_requests ADD CONSTRAINT mail_requests_scope_check CHECK (scope IN ('account', 'address', 'mailbox'));
