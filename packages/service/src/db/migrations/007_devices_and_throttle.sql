-- Known devices: a client that signed in to an account holds a device token (random, only its
-- SHA-256 kept here). A login from a known device is judged by the device's own failures, never
-- by the account's: guesses from elsewhere cannot lock the owner out.
CREATE TABLE devices (
  token_hash   bytea PRIMARY KEY CHECK (length(token_hash) = 32),
  user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL
);
CREATE INDEX devices_user_idx ON devices (user_id, last_used_at);
CREATE INDEX devices_expires_idx ON devices (expires_at);

-- A device's failures are counted as an account's and an address's are. `checks` holds the
-- leases of password checks under way on an account, from every process, each ending at its
-- check's deadline: the bound on checks under way holds across replicas. `alerted_at`: when the
-- account's owner was last told by mail that its logins were being throttled.
ALTER TABLE login_failures DROP CONSTRAINT login_failures_scope_check;
ALTER TABLE login_failures ADD CONSTRAINT login_failures_scope_check CHECK (scope IN ('account', 'address', 'device'));
ALTER TABLE login_failures DROP CONSTRAINT login_failures_failures_check;
ALTER TABLE login_failures ADD CONSTRAINT login_failures_failures_check CHECK (failures >= 0);
ALTER TABLE login_failures ADD COLUMN checks timestamptz[] NOT NULL DEFAULT '{}';
ALTER TABLE login_failures ADD COLUMN alerted_at timestamptz;

-- The mail that tells an owner their account's logins are being throttled (at most one an hour).
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_kind_check;
ALTER TABLE mail_outbox ADD CONSTRAINT mail_outbox_kind_check CHECK (kind IN ('verify_email', 'password_reset', 'registration_attempt', 'logins_throttled', 'test'));

-- The accounts that signed in from an address lately: the address bound grows with them.
CREATE INDEX sessions_address_idx ON sessions (address, created_at) WHERE address IS NOT NULL;

-- Registrations counted per client address and per registered mailbox (taken or not), in a
-- fixed window from a key's first registration.
CREATE TABLE registration_requests (
  scope             text NOT NULL CHECK (scope IN ('client', 'account')),
  key               text NOT NULL CHECK (length(key) BETWEEN 1 AND 254),
  requests          integer NOT NULL CHECK (requests >= 1),
  window_started_at timestamptz NOT NULL,
  PRIMARY KEY (scope, key)
);
