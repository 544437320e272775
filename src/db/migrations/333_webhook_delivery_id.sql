-- The id of a delivery an emit fans out (issue 26): the first 8 bytes of a UUIDv7 the emitter made
-- for the emit (unix ms, version 7, the top of its generator's counter), then the variant and 62
-- bits from the backend's random(). webhook_new_id() per delivery cost about 6 times as much
-- (gen_random_uuid() reads OpenSSL's generator; extract(epoch) is numeric arithmetic and parses its
-- unit), and its expression tree, compiled by each execution, was most of the fan-out's projection.
-- The ids keep time order (the emitter's clock, as event ids). Those of one emit differ by their
-- 62 random bits; ids of two emits by their prefix, or by the random bits when one process made both
-- within a millisecond. The ids are delivery keys for receivers and not secrets, so the backend's
-- generator (seeded per backend from a strong source) is enough. Inlined into the emit's plan.
create function webhook_delivery_id(prefix uuid) returns uuid
language sql volatile as $$
  select encode(
    overlay(uuid_send(prefix)
            placing int8send(floor(random() * 2147483648)::bigint << 31
                             | floor(random() * 2147483648)::bigint
                             | (-9223372036854775807 - 1))
            from 9 for 8),
    'hex')::uuid
$$;
