package store

import (
	"context"
	"database/sql"
	"sync"
)

// preparedDB prepares each distinct query once and reuses the statement.
// SQLite re-parses and re-plans every unprepared query, which was the
// largest cost of a hot authenticated read; PostgreSQL needs no help (pgx
// caches prepared statements per connection by itself).
type preparedDB struct {
	db    *sql.DB
	mu    sync.RWMutex
	stmts map[string]*sql.Stmt
}

func newPreparedDB(db *sql.DB) *preparedDB {
	return &preparedDB{db: db, stmts: map[string]*sql.Stmt{}}
}

func (p *preparedDB) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	p.mu.RLock()
	st, ok := p.stmts[query]
	p.mu.RUnlock()
	if ok {
		return st, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.stmts[query]; ok {
		return st, nil
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	p.stmts[query] = st
	return st, nil
}

func (p *preparedDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := p.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (p *preparedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := p.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext reports a prepare error through Row.Scan, as sql.DB does.
func (p *preparedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := p.stmt(ctx, query)
	if err != nil {
		// A Row that carries err: run the same failing query unprepared.
		return p.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

func (p *preparedDB) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for q, st := range p.stmts {
		st.Close()
		delete(p.stmts, q)
	}
	return nil
}
