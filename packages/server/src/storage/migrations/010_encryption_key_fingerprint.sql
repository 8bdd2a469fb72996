-- The fingerprint of the operator key that signing secrets are encrypted
-- under: HMAC-SHA256 of a fixed label under the key, never the key itself.
-- Herald compares it at start, so a missing or wrong key stops Herald with a
-- message instead of failing every delivery later
-- (docs/decisions/0014-encryption-key-fingerprint.md). At most one row.
CREATE TABLE encryption_key (
  singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  fingerprint  bytea NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT now()
);
