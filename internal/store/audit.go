package store

import (
	"context"
	"time"
)

// AuditEntry records an admin reaching a resource of another user.
type AuditEntry struct {
	ID           int64
	ActorID      string
	Action       string
	ResourceType string
	ResourceID   string
	OwnerID      string
	Reason       string
	CreatedAt    time.Time
}

// AuditCreate appends an entry.
func (s *Store) AuditCreate(ctx context.Context, e *AuditEntry) error {
	return mapErr(s.writer().QueryRowContext(ctx, `
		INSERT INTO audit_log (actor_id, action, resource_type, resource_id, owner_id, reason, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		e.ActorID, e.Action, e.ResourceType, e.ResourceID, e.OwnerID, e.Reason, s.ts(e.CreatedAt)).Scan(&e.ID))
}

// AuditList returns a page of entries, newest first, and the total count.
func (s *Store) AuditList(ctx context.Context, limit, offset int) ([]AuditEntry, int, error) {
	total, err := s.count(ctx, `SELECT COUNT(*) FROM audit_log`)
	if err != nil {
		return nil, 0, err
	}
	entries, err := queryAll(ctx, s.reader(), scanAuditEntry, `
		SELECT id, actor_id, action, resource_type, resource_id, owner_id, reason, created_at
		FROM audit_log ORDER BY id DESC LIMIT $1 OFFSET $2`, limit, offset)
	return entries, total, err
}

func scanAuditEntry(row interface{ Scan(...any) error }, e *AuditEntry) error {
	return row.Scan(&e.ID, &e.ActorID, &e.Action, &e.ResourceType, &e.ResourceID, &e.OwnerID, &e.Reason, &e.CreatedAt)
}
