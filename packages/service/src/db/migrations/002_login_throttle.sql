-- Failed logins per key, for throttling password guessing before it costs a hash.
-- scope 'account': the normalised email, whether or not an account has it (so a throttled
-- answer says nothing about existence); scope 'address': the client address (IPv6 by /64).
-- A row whose window is over counts as zero: the next failure starts a new window in place.
CREATE TABLE login_failures (
  scope             text NOT NULL CHECK (scope IN ('account', 'address')),
  key               text NOT NULL CHECK (length(key) BETWEEN 1 AND 254),
  failures          integer NOT NULL CHECK (failures >= 1),
  window_started_at timestamptz NOT NULL,
  last_failure_at   timestamptz NOT NULL,
  PRIMARY KEY (scope, key)
);
