/**
 * Versioned schema migrations, applied in order inside one transaction each. Never edit a
 * released migration: add the next one.
 *
 * Money columns are integers in micro-units (1e-6 USD or DIEM); balances change only
 * together with an append-only ledger row.
 */
export const MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: "accounts, keys, usage, ledger",
    sql: `
      CREATE TABLE accounts (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        kind        TEXT NOT NULL DEFAULT 'user' CHECK (kind IN ('user', 'wallet')),
        created_at  INTEGER NOT NULL
      );

      CREATE TABLE api_keys (
        id            TEXT PRIMARY KEY,
        account_id    TEXT NOT NULL REFERENCES accounts(id),
        description   TEXT NOT NULL,
        key_type      TEXT NOT NULL CHECK (key_type IN ('ADMIN', 'INFERENCE')),
        secret_hash   TEXT NOT NULL UNIQUE,
        last6         TEXT NOT NULL,
        created_at    INTEGER NOT NULL,
        expires_at    INTEGER,
        revoked_at    INTEGER,
        last_used_at  INTEGER
      );
      CREATE INDEX api_keys_account ON api_keys(account_id);

      CREATE TABLE balances (
        account_id    TEXT NOT NULL REFERENCES accounts(id),
        currency      TEXT NOT NULL CHECK (currency IN ('USD', 'DIEM', 'BUNDLED_CREDITS')),
        amount_micros INTEGER NOT NULL DEFAULT 0 CHECK (amount_micros >= 0),
        PRIMARY KEY (account_id, currency)
      );

      CREATE TABLE ledger (
        id             INTEGER PRIMARY KEY AUTOINCREMENT,
        account_id     TEXT NOT NULL REFERENCES accounts(id),
        currency       TEXT NOT NULL,
        delta_micros   INTEGER NOT NULL,
        kind           TEXT NOT NULL,
        request_id     TEXT,
        api_key_id     TEXT,
        note           TEXT,
        created_at     INTEGER NOT NULL
      );
      CREATE INDEX ledger_account_time ON ledger(account_id, created_at);
      CREATE TRIGGER ledger_append_only_update BEFORE UPDATE ON ledger BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;
      CREATE TRIGGER ledger_append_only_delete BEFORE DELETE ON ledger BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;

      CREATE TABLE usage (
        id                 INTEGER PRIMARY KEY AUTOINCREMENT,
        request_id         TEXT NOT NULL,
        account_id         TEXT,
        api_key_id         TEXT,
        endpoint           TEXT NOT NULL,
        model              TEXT,
        prompt_tokens      INTEGER NOT NULL DEFAULT 0,
        completion_tokens  INTEGER NOT NULL DEFAULT 0,
        cached_tokens      INTEGER NOT NULL DEFAULT 0,
        duration_ms        INTEGER NOT NULL,
        status             INTEGER NOT NULL,
        finish_reason      TEXT,
        created_at         INTEGER NOT NULL
      );
      CREATE INDEX usage_account_time ON usage(account_id, created_at);
      CREATE INDEX usage_request ON usage(request_id);
    `,
  },
  {
    version: 2,
    name: "credits: staking, reservations, key limits, rate limits",
    sql: `
      -- DIEM staking: the staked amount is the daily DIEM allocation; diem_epoch is the epoch
      -- (a UTC day starting at the configured reset hour) the DIEM balance was last refilled for.
      ALTER TABLE accounts ADD COLUMN staked_diem_micros INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE accounts ADD COLUMN diem_epoch INTEGER;

      -- Per-key consumption limits (the reference's consumptionLimit / limitPeriod) and rate-limit tier.
      ALTER TABLE api_keys ADD COLUMN limit_usd_micros INTEGER;
      ALTER TABLE api_keys ADD COLUMN limit_diem_micros INTEGER;
      ALTER TABLE api_keys ADD COLUMN limit_period TEXT NOT NULL DEFAULT 'EPOCH' CHECK (limit_period IN ('EPOCH', 'MONTH', 'LIFETIME'));
      ALTER TABLE api_keys ADD COLUMN rate_limit_tier TEXT NOT NULL DEFAULT 'standard' CHECK (rate_limit_tier IN ('standard', 'partner'));
      -- Admin overrides of the tier tables: {"text":{"rpm":..,"tpm":..},"image":{"rpm":..},...}
      ALTER TABLE api_keys ADD COLUMN rate_limit_overrides TEXT;

      -- Ledger lines carry what the billing usage endpoints report.
      ALTER TABLE ledger ADD COLUMN sku TEXT;
      ALTER TABLE ledger ADD COLUMN units REAL;
      ALTER TABLE ledger ADD COLUMN price_per_unit_usd REAL;
      ALTER TABLE ledger ADD COLUMN model TEXT;
      CREATE INDEX ledger_key_time ON ledger(api_key_id, created_at);
      CREATE INDEX ledger_request ON ledger(request_id);

      -- Money held for requests in flight. Holds do not touch balances: available money is
      -- balance minus holds, so a crash leaves nothing to give back, and start-up simply drops
      -- the holds of processes that no longer run.
      CREATE TABLE reservations (
        request_id      TEXT PRIMARY KEY,
        account_id      TEXT NOT NULL REFERENCES accounts(id),
        api_key_id      TEXT,
        diem_micros     INTEGER NOT NULL DEFAULT 0,
        bundled_micros  INTEGER NOT NULL DEFAULT 0,
        usd_micros      INTEGER NOT NULL DEFAULT 0,
        boot_id         TEXT NOT NULL,
        created_at      INTEGER NOT NULL
      );
      CREATE INDEX reservations_account ON reservations(account_id);

      CREATE TABLE rate_limit_log (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        account_id    TEXT,
        api_key_id    TEXT,
        model_id      TEXT,
        tier          TEXT NOT NULL,
        limit_type    TEXT NOT NULL,
        created_at    INTEGER NOT NULL
      );
      CREATE INDEX rate_limit_log_key ON rate_limit_log(api_key_id, created_at);
    `,
  },
  {
    version: 3,
    name: "billing and keys API: node settings, key model privacy",
    sql: `
      -- Node-wide settings that must survive restarts, e.g. the HMAC secret that signs
      -- usage-history cursors (generated on first use, never leaves the database).
      CREATE TABLE node_settings (
        name        TEXT PRIMARY KEY,
        value       TEXT NOT NULL,
        created_at  INTEGER NOT NULL
      );

      -- The reference's modelPrivacy of a key (which models it may call, by privacy tier).
      ALTER TABLE api_keys ADD COLUMN model_privacy TEXT NOT NULL DEFAULT 'ALL' CHECK (model_privacy IN ('ALL', 'PRIVATE_TEXT', 'PRIVATE_ONLY'));

      -- The rate-limit log is read per account, newest first.
      CREATE INDEX rate_limit_log_account ON rate_limit_log(account_id, created_at);
    `,
  },
  {
    // Numbered 100 so the billing migrations (2, 3 ...) can land independently.
    version: 100,
    name: "characters created by admins",
    sql: `
      CREATE TABLE characters (
        id                TEXT PRIMARY KEY,
        slug              TEXT NOT NULL UNIQUE,
        name              TEXT NOT NULL,
        description       TEXT,
        model_id          TEXT NOT NULL,
        system_prompt     TEXT NOT NULL,
        example_messages  TEXT NOT NULL DEFAULT '[]',
        tags              TEXT NOT NULL DEFAULT '[]',
        categories        TEXT NOT NULL DEFAULT '[]',
        adult             INTEGER NOT NULL DEFAULT 0,
        featured          INTEGER NOT NULL DEFAULT 0,
        web_enabled       INTEGER NOT NULL DEFAULT 0,
        photo_url         TEXT,
        author            TEXT NOT NULL,
        created_at        INTEGER NOT NULL,
        updated_at        INTEGER NOT NULL
      );
    `,
  },
  {
    version: 200,
    name: "audio: cloned voices, characters and audio seconds in usage",
    sql: `
      -- Cloned voices (POST /audio/voices): a vv_ handle bound to one account and one model. The
      -- style vector the speaker encoder derived is kept here; the reference sample and a voice
      -- pack of the vector sit in the data directory (voices/<id>.*).
      CREATE TABLE cloned_voices (
        id              TEXT PRIMARY KEY,
        account_id      TEXT NOT NULL REFERENCES accounts(id),
        model_id        TEXT NOT NULL,
        name            TEXT,
        embedding       BLOB NOT NULL,
        sample_file     TEXT NOT NULL,
        sample_format   TEXT NOT NULL,
        sample_seconds  REAL NOT NULL,
        created_at      INTEGER NOT NULL,
        last_used_at    INTEGER NOT NULL,
        expires_at      INTEGER NOT NULL
      );
      CREATE INDEX cloned_voices_account ON cloned_voices(account_id, created_at);

      -- What audio requests measure instead of tokens.
      ALTER TABLE usage ADD COLUMN characters INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE usage ADD COLUMN audio_seconds REAL NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 300,
    name: "durable jobs (video generation)",
    sql: `
      -- Long-running work (video generation) as rows, so a restart loses nothing: QUEUED rows
      -- wait for a worker, RUNNING rows left by a dead process are queued again (or failed
      -- once attempts run out), results are files under the data directory.
      -- The charge is a ledger row with request_id = jobs.id, made in the transaction that
      -- inserts the job; a failure refunds it in the transaction that sets refunded_at.
      CREATE TABLE jobs (
        id                   TEXT PRIMARY KEY,
        kind                 TEXT NOT NULL,
        model                TEXT NOT NULL,
        account_id           TEXT,
        api_key_id           TEXT,
        input_json           TEXT NOT NULL,
        status               TEXT NOT NULL CHECK (status IN ('QUEUED', 'RUNNING', 'COMPLETED', 'FAILED')),
        attempts             INTEGER NOT NULL DEFAULT 0,
        progress             REAL NOT NULL DEFAULT 0,
        error                TEXT,
        result_path          TEXT,
        result_bytes         INTEGER,
        result_content_type  TEXT,
        charged_usd_micros   INTEGER NOT NULL DEFAULT 0,
        charged_diem_micros  INTEGER NOT NULL DEFAULT 0,
        refunded_at          INTEGER,
        boot_id              TEXT,
        created_at           INTEGER NOT NULL,
        started_at           INTEGER,
        finished_at          INTEGER,
        deleted_at           INTEGER
      );
      CREATE INDEX jobs_queue ON jobs(status, created_at);
      CREATE INDEX jobs_account ON jobs(account_id, created_at);
      CREATE INDEX jobs_model_finished ON jobs(model, status, finished_at);
    `,
  },
  {
    version: 400,
    name: "wallets: sign-in-with-x accounts, nonces, x402 payments, RPC idempotency",
    sql: `
      -- A wallet is an account of kind 'wallet', keyed by its normalised address
      -- (EVM: 0x + lower-case hex; Solana: base58 as is).
      CREATE TABLE wallets (
        address     TEXT PRIMARY KEY,
        account_id  TEXT NOT NULL UNIQUE REFERENCES accounts(id),
        family      TEXT NOT NULL CHECK (family IN ('evm', 'solana')),
        created_at  INTEGER NOT NULL
      );

      -- Sign-in nonces seen, kept until the sign-in they belong to could no longer be accepted.
      -- key = family:address:nonce. The primary key makes a replay lose the race.
      CREATE TABLE siwx_nonces (
        key         TEXT PRIMARY KEY,
        expires_at  INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX siwx_nonces_expiry ON siwx_nonces(expires_at);

      -- One row per distinct payment authorization. idempotency_key is the authorization's
      -- identity on its chain (EVM: network:asset:from:nonce, as the token contract sees it;
      -- Solana: network:first signature), so the same authorization can never credit twice.
      CREATE TABLE x402_payments (
        id               TEXT PRIMARY KEY,
        idempotency_key  TEXT NOT NULL UNIQUE,
        payload_hash     TEXT NOT NULL,
        account_id       TEXT NOT NULL REFERENCES accounts(id),
        wallet           TEXT NOT NULL,
        network          TEXT NOT NULL,
        asset            TEXT NOT NULL,
        pay_to           TEXT NOT NULL,
        amount_micros    INTEGER NOT NULL CHECK (amount_micros > 0),
        mode             TEXT NOT NULL CHECK (mode IN ('onchain', 'deferred', 'off')),
        -- settling: claimed, being submitted or waiting for its receipt; pending: deferred, not
        -- submitted yet; submitted: deferred, sent; confirmed: mined and matching; failed;
        -- none: settlement off.
        settlement       TEXT NOT NULL CHECK (settlement IN ('settling', 'pending', 'submitted', 'confirmed', 'failed', 'none')),
        credited         INTEGER NOT NULL DEFAULT 0 CHECK (credited IN (0, 1)),
        payload          TEXT NOT NULL,
        valid_before     INTEGER NOT NULL,
        tx_hash          TEXT,
        error            TEXT,
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL
      );
      CREATE INDEX x402_payments_settlement ON x402_payments(settlement, valid_before);
      CREATE INDEX x402_payments_wallet ON x402_payments(wallet, created_at);

      -- Crypto RPC Idempotency-Key cache per account: the first request claims the key
      -- (response NULL), the answer is stored when it completes.
      CREATE TABLE rpc_idempotency (
        account_id   TEXT NOT NULL,
        key          TEXT NOT NULL,
        body_hash    TEXT NOT NULL,
        network      TEXT NOT NULL,
        response     TEXT,
        headers      TEXT,
        created_at   INTEGER NOT NULL,
        PRIMARY KEY (account_id, key)
      );
      CREATE INDEX rpc_idempotency_time ON rpc_idempotency(created_at);
    `,
  },
  {
    version: 500,
    name: "api_keys.operator: the node operator's keys apart from account admins; ledger.granted_by",
    sql: `
      -- An operator key is an ADMIN key of the node's operator: it alone grants credit and
      -- manages the node (models, every account, metrics). Keys made through POST /api_keys
      -- never are. On an existing node the oldest admin key (necessarily made with the CLI,
      -- since the API needs an admin key to make one) becomes the operator key.
      ALTER TABLE api_keys ADD COLUMN operator INTEGER NOT NULL DEFAULT 0 CHECK (operator IN (0, 1));
      UPDATE api_keys SET operator = 1
        WHERE id = (SELECT id FROM api_keys WHERE key_type = 'ADMIN' ORDER BY created_at, rowid LIMIT 1);

      -- Who granted credit: an operator key's id, or 'cli'. NULL for other entries and older grants.
      ALTER TABLE ledger ADD COLUMN granted_by TEXT;
    `,
  },
  {
    version: 600,
    name: "model_file_features: what GET /models reads from a GGUF's header, cached per file",
    sql: `
      -- A chat model's features (tool calls, reasoning) come from analysing its chat template,
      -- about a second per file; the answer is kept per file and reused while the file is the
      -- same (its size and modification time), so the first GET /models after a restart is instant.
      CREATE TABLE model_file_features (
        path         TEXT NOT NULL,
        backend      TEXT NOT NULL,
        size         INTEGER NOT NULL,
        mtime_ms     INTEGER NOT NULL,
        features     TEXT NOT NULL,
        updated_at   INTEGER NOT NULL,
        PRIMARY KEY (path, backend)
      );
    `,
  },
  {
    version: 610,
    name: "character_reviews: one star rating (and an optional message) per account and character",
    sql: `
      -- Reviews are kept by slug: a character of characters.json has no row of its own in SQLite.
      CREATE TABLE character_reviews (
        id              TEXT PRIMARY KEY,
        character_slug  TEXT NOT NULL,
        account_id      TEXT NOT NULL REFERENCES accounts(id),
        rating          INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
        message         TEXT,
        locale          TEXT,
        created_at      INTEGER NOT NULL,
        UNIQUE (character_slug, account_id)
      );
      CREATE INDEX character_reviews_by_character ON character_reviews (character_slug, created_at);
    `,
  },
  {
    version: 700,
    name: "responses: stored Responses API answers (input items, output) for retrieval and previous_response_id",
    sql: `
      -- A response kept with store (the default): the items earlier turns contributed
      -- (context_items: the previous response's context, input and output), this request's own
      -- input items, and the response as answered. Only its account reads it; rows past
      -- expires_at are never served and are purged.
      CREATE TABLE responses (
        id                    TEXT PRIMARY KEY,
        account_id            TEXT NOT NULL,
        model                 TEXT NOT NULL,
        previous_response_id  TEXT,
        context_items         TEXT NOT NULL,
        input_items           TEXT NOT NULL,
        response              TEXT NOT NULL,
        created_at            INTEGER NOT NULL,
        expires_at            INTEGER NOT NULL
      );
      CREATE INDEX responses_expiry ON responses(expires_at);
    `,
  },
  {
    version: 710,
    name: "usage.user and usage.metadata: the caller's end user and labels of a text request",
    sql: `
      -- What a chat or responses request names as its end user (user) and its labels (metadata,
      -- a JSON object of strings), kept so usage history can show and filter by them. NULL when not sent.
      ALTER TABLE usage ADD COLUMN user TEXT;
      ALTER TABLE usage ADD COLUMN metadata TEXT;
    `,
  },
  {
    version: 720,
    name: "model_memory_figures: a GGUF model's memory once loaded, kept per file and settings",
    sql: `
      -- Estimating a GGUF model's memory simulates its load in llama.cpp (about 0.5 s, and memory
      -- the process keeps); a loaded model reports the same figure for nothing. Either is kept per
      -- file (path, size, modification time) and per the settings it depends on (settings: the
      -- backend's key, with the llama.cpp release and device), so later starts read it.
      CREATE TABLE model_memory_figures (
        path         TEXT NOT NULL,
        backend      TEXT NOT NULL,
        settings     TEXT NOT NULL,
        size         INTEGER NOT NULL,
        mtime_ms     INTEGER NOT NULL,
        ram_bytes    INTEGER NOT NULL,
        vram_bytes   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL,
        PRIMARY KEY (path, backend, settings)
      );
    `,
  },
  {
    version: 730,
    name: "response_blobs: long strings of stored response items, kept once however many responses hold them",
    sql: `
      -- A response continued with previous_response_id stores its earlier turns again
      -- (context_items), so a file sent in a conversation's first turn was stored once more with
      -- every later turn: 6.7 MB a turn for a 5 MB PDF. Strings of stored items past a few KB
      -- (files, pictures and audio as data, pasted text) are kept here once, by their SHA-256;
      -- the items' JSON holds "" in their place and response_blob_refs says where each goes.
      CREATE TABLE response_blobs (
        hash  TEXT PRIMARY KEY,
        data  TEXT NOT NULL
      );
      CREATE TABLE response_blob_refs (
        response_id  TEXT NOT NULL REFERENCES responses(id) ON DELETE CASCADE,
        field        TEXT NOT NULL CHECK (field IN ('context', 'input')),
        path         TEXT NOT NULL,
        hash         TEXT NOT NULL REFERENCES response_blobs(hash)
      );
      CREATE INDEX response_blob_refs_by_response ON response_blob_refs(response_id);
      CREATE INDEX response_blob_refs_by_hash ON response_blob_refs(hash);
    `,
  },
  {
    version: 740,
    name: "api_keys.gateway: a gateway's key on a pool node, outside the per-key limits and the abuse guard",
    sql: `
      -- A gateway relays many callers through one key (docs/scaling.md) and applies their limits
      -- itself; held to one caller's limits here, the node refused the gateway (and so everyone
      -- behind it) after a minute's share of one key, then blocked it for repeated failures.
      ALTER TABLE api_keys ADD COLUMN gateway INTEGER NOT NULL DEFAULT 0 CHECK (gateway IN (0, 1));
    `,
  },
];
