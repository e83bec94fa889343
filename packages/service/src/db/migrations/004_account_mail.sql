-- Email: verified addresses, one-time account tokens, the transactional outbox, mail throttling.
ALTER TABLE users ADD COLUMN email_verified_at timestamptz;

-- Password-reset and email-verification tokens: random 32 bytes sent in a mail link; only their
-- SHA-256 is stored. Single use (used_at), short-lived (expires_at), spent inside a transaction
-- that locks the row, so two uses of one token race to one winner.
CREATE TABLE account_tokens (
  token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
  purpose    text NOT NULL CHECK (purpose IN ('password_reset', 'verify_email')),
  user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at    timestamptz
);
CREATE INDEX account_tokens_user_idx ON account_tokens (user_id, purpose);
CREATE INDEX account_tokens_expires_idx ON account_tokens (expires_at);

-- Mail to send, inserted in the same transaction as the change that causes it (src/mail/).
-- A dispatcher claims due rows (FOR UPDATE SKIP LOCKED, then a lease in next_attempt_at), sends
-- them and marks them; 'logged': no SMTP server was configured, the message went to the log.
-- The text holds a live link until the message is sent or given up; then it is cleared.
CREATE TABLE mail_outbox (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind            text NOT NULL CHECK (kind IN ('verify_email', 'password_reset', 'registration_attempt', 'test')),
  recipient       text NOT NULL CHECK (length(recipient) BETWEEN 3 AND 254),
  subject         text NOT NULL CHECK (length(subject) <= 200),
  body_text       text CHECK (length(body_text) <= 10000),
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'logged', 'failed')),
  attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text CHECK (length(last_error) <= 500),
  created_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz
);
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE status = 'pending';

-- Requests that send account mail (password reset, verification again), counted per account
-- (the normalised email, known or not) and per client address in a fixed window.
CREATE TABLE mail_requests (
  scope             text NOT NULL CHECK (scope IN ('account', 'address')),
  key               text NOT NULL CHECK (length(key) BETWEEN 1 AND 254),
  requests          integer NOT NULL CHECK (requests >= 1),
  window_started_at timestamptz NOT NULL,
  PRIMARY KEY (scope, key)
);
