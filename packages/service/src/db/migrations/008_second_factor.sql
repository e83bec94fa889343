-- A second factor: a TOTP secret per user (RFC 6238), sealed under the key-encryption key with
-- the user id as authenticated data; `confirmed_at` is set by a first valid code, and only a
-- confirmed secret is a factor. `last_used_step`: the time step of the last code accepted, so each
-- code works once (an UPDATE that needs a later step: of concurrent submissions, one wins).
CREATE TABLE totp_factors (
  user_id        uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  secret_sealed  bytea NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  confirmed_at   timestamptz,
  last_used_step bigint
);

-- Recovery codes: ten per user, kept as a keyed hash (accounts/recovery-codes.ts), each spent once.
CREATE TABLE recovery_codes (
  user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  code_hash  bytea NOT NULL CHECK (length(code_hash) = 32),
  created_at timestamptz NOT NULL DEFAULT now(),
  used_at    timestamptz,
  PRIMARY KEY (user_id, code_hash)
);

-- The second step of a sign-in: a password login of an account with a second factor gets a
-- short-lived challenge (only its SHA-256 kept), spent by the step that completes the sign-in.
-- `purpose` 'enrol': the account must enrol a factor first (TOLLBOOTH_SECOND_FACTOR=required).
-- `amr`: the methods already passed (RFC 8176: 'pwd'). `device_hash`: the known device the first
-- step came from, kept by the session the second step opens.
CREATE TABLE login_challenges (
  token_hash  bytea PRIMARY KEY CHECK (length(token_hash) = 32),
  user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  purpose     text NOT NULL CHECK (purpose IN ('second_factor', 'enrol')),
  amr         text[] NOT NULL,
  device_hash bytea,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX login_challenges_expires_idx ON login_challenges (expires_at);
CREATE INDEX login_challenges_user_idx ON login_challenges (user_id);

-- How each session signed in (RFC 8176 amr), carried by every access token of it.
ALTER TABLE sessions ADD COLUMN amr text[] NOT NULL DEFAULT '{pwd}';
