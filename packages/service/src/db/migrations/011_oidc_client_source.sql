-- Where a relying party was registered, which says who may change it: `cli` (`tollbooth clients
-- add`), `file` (TOLLBOOTH_OIDC_CLIENTS_FILE or `tollbooth clients apply`: applying the file again
-- updates it, and removes it once the file no longer lists it) or `registration` (dynamic client
-- registration, RFC 7591, when TOLLBOOTH_OIDC_REGISTRATION allows it).
ALTER TABLE oidc_clients
  ADD COLUMN source text NOT NULL DEFAULT 'cli' CHECK (source IN ('cli', 'file', 'registration'));
