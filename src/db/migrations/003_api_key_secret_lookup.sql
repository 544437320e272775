-- API keys are looked up by the hash of the whole secret, not by their public prefix: a presented
-- key then costs the same whether or not its prefix exists, so timing cannot enumerate prefixes.
create unique index api_keys_secret_hash_idx on api_keys (secret_hash);
