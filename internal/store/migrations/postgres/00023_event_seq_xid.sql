-- An event's seq was the user's counter row, bumped in the appending
-- transaction and locked until its commit: one busy user's transactions
-- queued for that row, on every node. Now a seq is made of its
-- transaction's id ((xid + base) << 12 | n, n numbering the transaction's
-- events, at most 4096), which needs no row, and readers read only below the oldest
-- transaction still open (store/events.go), so no seq ever appears below
-- one already read. The counters are no longer written: dropped.
--
-- base keeps every new seq above every existing one. xid << 12 is already
-- above any counter (a counter grows by a transaction's few events, the
-- xid by one per transaction), so base is 0 unless a user's transactions
-- appended more than 4096 events each on average; it is also what
-- Store.Migrate raises after a dump is restored into a cluster whose xids
-- are lower.

-- +goose Up
CREATE TABLE event_seq_base (
    one  BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    base BIGINT NOT NULL
);
INSERT INTO event_seq_base (base)
SELECT GREATEST(0, (GREATEST(
        (SELECT COALESCE(max(seq), 0) FROM event_counters),
        (SELECT COALESCE(max(seq), 0) FROM events)) >> 12) + 1
    - pg_current_xact_id()::text::bigint);
DROP TABLE event_counters;

-- +goose Down
CREATE TABLE event_counters (
    user_id UUID PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL
);
INSERT INTO event_counters (user_id, seq)
SELECT user_id, max(seq) FROM events GROUP BY user_id;
DROP TABLE event_seq_base;
