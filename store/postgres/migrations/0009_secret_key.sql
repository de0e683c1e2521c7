-- The data key that seals the database's secrets, wrapped under the key of the processes'
-- key file, whose id it names (docs/decisions/0224-secrets-encrypted-at-rest.md). One row.
CREATE TABLE secret_key (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    key_id  text NOT NULL,
    wrapped bytea NOT NULL
);
