-- Dynamic client registrations (TOLLBOOTH_OIDC_REGISTRATION) counted per client address in the
-- same table and window as account registrations, under a scope of their own.
ALTER TABLE registration_requests DROP CONSTRAINT registration_requests_scope_check;
ALTER TABLE registration_requests ADD CONSTRAINT registration_requests_scope_check CHECK (scope IN ('client', 'account', 'oidc-client'));
