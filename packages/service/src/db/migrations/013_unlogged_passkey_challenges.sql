-- A passkey ceremony's challenge lives a few minutes and is written twice (issued, spent): as an
-- unlogged table, neither write waits for a WAL flush. A crash empties the table (PostgreSQL
-- truncates unlogged tables in recovery) and a standby does not have it: the ceremonies under way
-- then fail with PASSKEY_CHALLENGE_INVALID and their users start again; nothing else is lost.
ALTER TABLE passkey_challenges SET UNLOGGED;
