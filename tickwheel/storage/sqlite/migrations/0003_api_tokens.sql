-- 0003: API tokens, stored only as hashes.

CREATE TABLE api_tokens (
    token_id    TEXT PRIMARY KEY,
    hash        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    scopes      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
