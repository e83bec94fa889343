-- The throttle's counts and the leases of checks under way are written twice a login (the lease
-- claimed, then given back with the outcome): as an unlogged table, neither write waits for a
-- WAL flush nor adds to the WAL a standby replays. A crash empties the table (PostgreSQL
-- truncates unlogged tables in recovery), and a standby promoted after a failover starts with it
-- empty: the failures counted in the current window are forgotten, so each account and address
-- gets its free failures once more, and the leases of checks that were under way are gone with
-- the processes that held them. Sessions, accounts and devices stay logged.
ALTER TABLE login_failures SET UNLOGGED;
