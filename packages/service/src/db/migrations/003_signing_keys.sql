-- Access-token signing keys shared by every replica (src/keys/). The public half is a JWK,
-- published at /.well-known/jwks.json; the private half is sealed with AES-256-GCM under the
-- key-encryption key from the environment (or a file), never stored in plaintext.
-- A key signs from activates_at until the next key activates; it keeps verifying until the
-- last token it signed has expired (the access-token lifetime after that), then leaves the
-- JWK Set. retired_at, when set, ends it at once (a key believed compromised).
CREATE TABLE signing_keys (
  kid                text PRIMARY KEY CHECK (length(kid) BETWEEN 1 AND 128),
  alg                text NOT NULL CHECK (alg IN ('EdDSA', 'ES256')),
  public_jwk         jsonb NOT NULL,
  -- version byte, 12-byte nonce, 16-byte tag, then the encrypted PKCS#8 DER (src/keys/sealing.ts).
  private_key_sealed bytea NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  activates_at       timestamptz NOT NULL,
  retired_at         timestamptz
);
CREATE INDEX signing_keys_activates_at ON signing_keys (activates_at);
