-- PostgreSQL's 00023 makes event seqs of transaction ids, so that a user's
-- transactions no longer queue for their counter row. SQLite has one
-- writer, for which the counter costs no waiting: it keeps it. This file
-- keeps the two dialects' versions in step.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
