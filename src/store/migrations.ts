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
        amount_micros INTEGER NOT NULL DEFAULT 0,
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
];
