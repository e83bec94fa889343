-- tollbooth's two database roles, least privilege (deploy/README.md, "Database roles"):
--   tollbooth_migrator  owns the database and its public schema: `tollbooth migrate` runs as it
--                       and grants the runtime role its rows (TOLLBOOTH_RUNTIME_ROLE);
--   tollbooth_service   what `tollbooth serve` connects as: rows only, never DDL.
-- Neither is a superuser, and neither may create roles or databases. The same names and
-- attributes as the embedded database's (packages/service/src/db/embedded/role.ts).
--
-- compose.yaml mounts it in /docker-entrypoint-initdb.d: the postgres image runs it once, on an
-- empty data folder, as the superuser in POSTGRES_DB, with psql (15 or later for \getenv). The
-- passwords come from the container's environment, never from this file. Elsewhere, as a
-- superuser in the service's database:
--   DB_MIGRATOR_PASSWORD=... DB_SERVICE_PASSWORD=... psql -v ON_ERROR_STOP=1 -d tollbooth -f 10-tollbooth-roles.sql
\set ON_ERROR_STOP on
\getenv migrator_password DB_MIGRATOR_PASSWORD
\getenv service_password DB_SERVICE_PASSWORD
\if :{?migrator_password}
\else
  \set migrator_password ''
\endif
\if :{?service_password}
\else
  \set service_password ''
\endif
-- Into settings of this session, so the block below reads them (psql does not substitute
-- variables inside a dollar-quoted body).
SELECT set_config('tollbooth.migrator_password', :'migrator_password', false) IS NOT NULL AS migrator_password_read,
       set_config('tollbooth.service_password', :'service_password', false) IS NOT NULL AS service_password_read
\gset

DO $roles$
DECLARE
  migrator_password text := current_setting('tollbooth.migrator_password');
  service_password text := current_setting('tollbooth.service_password');
  attributes text := 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS';
BEGIN
  IF length(migrator_password) < 16 OR length(service_password) < 16 THEN
    RAISE EXCEPTION 'set DB_MIGRATOR_PASSWORD and DB_SERVICE_PASSWORD to random passwords of 16 characters or more (openssl rand -hex 24)';
  END IF;
  IF migrator_password = service_password THEN
    RAISE EXCEPTION 'DB_MIGRATOR_PASSWORD and DB_SERVICE_PASSWORD must differ';
  END IF;
  EXECUTE format('CREATE ROLE tollbooth_migrator %s PASSWORD %L', attributes, migrator_password);
  EXECUTE format('CREATE ROLE tollbooth_service %s PASSWORD %L', attributes, service_password);
  EXECUTE format('ALTER DATABASE %I OWNER TO tollbooth_migrator', current_database());
  -- Only the two roles connect (the owner may; PUBLIC's CONNECT and TEMPORARY go).
  EXECUTE format('REVOKE ALL ON DATABASE %I FROM PUBLIC', current_database());
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO tollbooth_service', current_database());
END
$roles$;
SELECT set_config('tollbooth.migrator_password', '', false) IS NOT NULL AS forgotten,
       set_config('tollbooth.service_password', '', false) IS NOT NULL AS forgotten_too
\gset

-- The schema the migrations create their tables in.
ALTER SCHEMA public OWNER TO tollbooth_migrator;
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO tollbooth_service;
