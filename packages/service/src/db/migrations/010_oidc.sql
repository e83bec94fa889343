-- The OpenID Connect provider (oidc/): what oidc-provider keeps between the steps of a flow, so
-- any replica can serve any step. One row per model instance (AuthorizationCode, AccessToken,
-- RefreshToken, Grant, Session, Interaction, ReplayDetection ...): its payload as the library
-- hands it over, the columns it is found by (grant_id: every token of a grant revoked at once;
-- uid: a session by its uid), when it was consumed (a code or a rotated refresh token presented
-- again is refused and revokes its grant) and when it expires (the purge deletes it then).
CREATE TABLE oidc_payloads (
  model       text NOT NULL CHECK (length(model) BETWEEN 1 AND 64),
  id          text NOT NULL CHECK (length(id) BETWEEN 1 AND 256),
  payload     jsonb NOT NULL,
  grant_id    text,
  uid         text,
  consumed_at timestamptz,
  expires_at  timestamptz,
  PRIMARY KEY (model, id)
);
CREATE INDEX oidc_payloads_grant_idx ON oidc_payloads (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oidc_payloads_uid_idx ON oidc_payloads (model, uid) WHERE uid IS NOT NULL;
CREATE INDEX oidc_payloads_expires_idx ON oidc_payloads (expires_at) WHERE expires_at IS NOT NULL;

-- The relying parties allowed to sign users in (`tollbooth clients add`): no dynamic registration.
-- `secret_hash`: SHA-256 of the generated secret (high-entropy, so a fast hash is enough), none
-- for a public client (PKCE only) or one that signs its own assertions (private_key_jwt).
-- `metadata`: the client's registered metadata as oidc-provider reads it (redirect URIs, matched
-- exactly; its authentication method; its public keys), without a secret.
CREATE TABLE oidc_clients (
  client_id   text PRIMARY KEY CHECK (client_id ~ '^[A-Za-z0-9._-]{1,64}$'),
  secret_hash bytea CHECK (length(secret_hash) = 32),
  first_party boolean NOT NULL DEFAULT false,
  metadata    jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
