-- An endpoint's custom headers and metadata.
--
-- headers: NULL when it has none (the claim reads it for every delivery, and
-- NULL costs nothing to send along), else a JSON array of {name, value} or,
-- for a secret value, {name, sealed, hint}: sealed is the value encrypted
-- under the operator key, as secret_encrypted is.
-- metadata: a flat JSON object of string keys to string values, the owner's
-- own labels; the endpoint list filters on it with @> (containment).
ALTER TABLE endpoints ADD COLUMN headers jsonb;
ALTER TABLE endpoints ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}';
