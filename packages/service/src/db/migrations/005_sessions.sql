-- Sessions: one row per refresh family (one login or registration and its rotations). The id
-- is the family id; access tokens carry it as `sid`, so a revoked session's access tokens are
-- refused too. expires_at is the absolute end: no refresh token of the session outlives it.
CREATE TABLE sessions (
  id             uuid PRIMARY KEY,
  user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at     timestamptz NOT NULL DEFAULT now(),
  last_used_at   timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL,
  user_agent     text CHECK (user_agent IS NULL OR length(user_agent) <= 512),
  address        text CHECK (address IS NULL OR length(address) <= 64),
  revoked_at     timestamptz,
  revoked_reason text CHECK (revoked_reason IS NULL OR length(revoked_reason) <= 64)
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
-- The purge job's scans (src/db/purge.ts).
CREATE INDEX sessions_ended_idx ON sessions (expires_at);
CREATE INDEX sessions_revoked_idx ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;

-- The families that exist already: their first and last token give created and last used,
-- their latest expiry the absolute end (no session is cut short by this migration), and a
-- family whose every token is revoked is a revoked session.
INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at, revoked_at, revoked_reason)
SELECT family_id,
       (array_agg(user_id))[1],
       min(created_at),
       max(created_at),
       max(expires_at),
       CASE WHEN bool_and(revoked_at IS NOT NULL) THEN max(revoked_at) END,
       CASE WHEN bool_and(revoked_at IS NOT NULL) THEN 'backfilled' END
  FROM refresh_tokens
 GROUP BY family_id;

ALTER TABLE refresh_tokens
  ADD CONSTRAINT refresh_tokens_session_fkey FOREIGN KEY (family_id) REFERENCES sessions (id) ON DELETE CASCADE;

-- A rotated token keeps its successor sealed under a key derived from the token itself
-- (src/server/refresh-successor.ts): a second refresh of it within the grace window gets the
-- same successor, and only the holder of the rotated token can open it.
ALTER TABLE refresh_tokens ADD COLUMN successor_sealed bytea CHECK (successor_sealed IS NULL OR length(successor_sealed) <= 256);

CREATE INDEX refresh_tokens_expires_idx ON refresh_tokens (expires_at);
CREATE INDEX refresh_tokens_revoked_idx ON refresh_tokens (revoked_at) WHERE revoked_at IS NOT NULL;
