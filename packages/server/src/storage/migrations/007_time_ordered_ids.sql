-- A version-7 UUID (RFC 9562): the first 48 bits are the Unix time in
-- milliseconds, the rest random but for the version and variant bits.
CREATE FUNCTION herald_uuid_v7(p_at timestamptz) RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
  SELECT encode(
           set_bit(set_bit(
             overlay(uuid_send(gen_random_uuid())
                     placing substring(int8send(floor(extract(epoch FROM p_at) * 1000)::bigint) FROM 3)
                     FROM 1 FOR 6),
             52, 1), 53, 1),
           'hex')::uuid
$$;
