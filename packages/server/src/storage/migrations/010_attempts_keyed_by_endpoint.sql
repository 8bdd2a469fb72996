-- One index for the attempt log instead of two (BENCHMARKS.md, thirteenth
-- session).
--
-- Every attempt wrote an entry in its primary key (id) and another in
-- attempts_endpoint_recent (endpoint_id, started_at DESC). Every read of the
-- log names the endpoint: its list and its newest attempt (by time), one
-- attempt (by endpoint and id), the pruning and an endpoint's delete (by
-- endpoint). So the key becomes (endpoint_id, started_at, id), which serves
-- them all, and the id's own index goes: an attempt writes one index entry
-- where it wrote three before migration 009.
--
-- Attempt ids are still unique in practice (UUIDv7 with 74 random bits, or
-- random UUIDs before migration 007); what the key guarantees now is that
-- a batch written twice logs each attempt once (ON CONFLICT on the key),
-- which is what the id's uniqueness was used for. One attempt is found by
-- its endpoint and id: a walk of that endpoint's log, which the pruning
-- keeps to about a hundred. A list newest first is this index read
-- backwards, ties on started_at in id order, with no sort.
ALTER TABLE attempts DROP CONSTRAINT attempts_pkey;
ALTER TABLE attempts ADD CONSTRAINT attempts_pkey PRIMARY KEY (endpoint_id, started_at, id);
DROP INDEX IF EXISTS attempts_endpoint_recent;
