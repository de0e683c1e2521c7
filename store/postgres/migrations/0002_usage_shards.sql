-- Usage counters in shards (docs/decisions/0099-postgres-usage-shards.md): every
-- event of a tenant added to the same two or three rows, so that under serializable isolation
-- any two concurrent ingests of one tenant collided on a row and one of them was run again.
-- A transaction now adds to one of 16 shards of a counter, picked at random; a report sums them.
ALTER TABLE usage_counters ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_pkey;
ALTER TABLE usage_counters ADD PRIMARY KEY (tenant_id, day, metric, shard);
