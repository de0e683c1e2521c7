-- Foreign keys where they protect something (docs/decisions/0226-postgres-foreign-keys.md).
-- Every key leads with tenant_id on the tenant-owned side, and none goes from a global
-- lookup table (a reference table on Citus) to a tenant-owned one (distributed), which
-- Citus refuses: a user and an API key name their row of the global lookup instead, the
-- way a tenant names its slug (migration 10).

-- A user's email is its row of user_emails: login finds every user, and two users never
-- hold one email. Deferred to the commit: PutUser writes the user before the email's row.
CREATE UNIQUE INDEX user_emails_user ON user_emails (tenant_id, user_id, email);
ALTER TABLE users ADD CONSTRAINT users_email_fkey FOREIGN KEY (tenant_id, id, email)
    REFERENCES user_emails (tenant_id, user_id, email) DEFERRABLE INITIALLY DEFERRED;

-- An API key's hash is its row of api_key_hashes: a key is found by its hash, and a hash
-- names one key.
CREATE UNIQUE INDEX api_key_hashes_key ON api_key_hashes (tenant_id, key_id, hash);
ALTER TABLE api_keys ADD CONSTRAINT api_keys_hash_fkey FOREIGN KEY (tenant_id, id, hash)
    REFERENCES api_key_hashes (tenant_id, key_id, hash) DEFERRABLE INITIALLY DEFERRED;

-- The stream's rows belong to a tenant: the prune walks the tenants, so a row of no tenant
-- would never go. Rows of no tenant, which nothing reads, are dropped first.
DELETE FROM stream_changes s WHERE NOT EXISTS (SELECT FROM tenants t WHERE t.tenant_id = s.tenant_id);
DELETE FROM stream_pruned s WHERE NOT EXISTS (SELECT FROM tenants t WHERE t.tenant_id = s.tenant_id);
ALTER TABLE stream_changes ADD CONSTRAINT stream_changes_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants;
ALTER TABLE stream_pruned ADD CONSTRAINT stream_pruned_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants;
