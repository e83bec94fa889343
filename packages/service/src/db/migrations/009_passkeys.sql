-- Passkeys (WebAuthn credentials): a public key per credential, found by its credential id when
-- a discoverable credential signs in without an email. `sign_count`: the authenticator's counter,
-- which must grow (one going back is a cloned authenticator); `backup_eligible` and `backed_up`:
-- the credential's flags (a synced passkey is both). `transports`: the browser's hints.
CREATE TABLE passkeys (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  credential_id   bytea NOT NULL CHECK (length(credential_id) BETWEEN 16 AND 1023),
  user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  public_key      bytea NOT NULL CHECK (length(public_key) <= 2048),
  sign_count      bigint NOT NULL CHECK (sign_count BETWEEN 0 AND 4294967295),
  transports      text[] NOT NULL DEFAULT '{}',
  backup_eligible boolean NOT NULL,
  backed_up       boolean NOT NULL,
  aaguid          uuid NOT NULL,
  name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
  created_at      timestamptz NOT NULL DEFAULT now(),
  last_used_at    timestamptz
);
CREATE UNIQUE INDEX passkeys_credential_id_key ON passkeys (credential_id);
CREATE INDEX passkeys_user_idx ON passkeys (user_id, created_at);

-- The challenges of passkey ceremonies, kept server-side so any replica can complete one: only
-- their SHA-256, each spent once (DELETE ... RETURNING) before its short expiry. `user_id`: the
-- account a registration, or a second step, is for; none for a sign-in that names no account.
CREATE TABLE passkey_challenges (
  challenge_hash bytea PRIMARY KEY CHECK (length(challenge_hash) = 32),
  purpose        text NOT NULL CHECK (purpose IN ('register', 'authenticate')),
  user_id        uuid REFERENCES users (id) ON DELETE CASCADE,
  expires_at     timestamptz NOT NULL
);
CREATE INDEX passkey_challenges_expires_idx ON passkey_challenges (expires_at);

-- An account may have no password: one made to sign in with passkeys alone. Its last passkey
-- cannot be deleted (the service refuses it), and a password login of it fails as a wrong one.
ALTER TABLE users ALTER COLUMN password_hash DROP NOT NULL;
