package auth

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/store"
)

// Find loads the thing id with get and answers it if the caller may reach
// it (Reach): a malformed id, an absent thing and another user's all
// answer notFound alike, so ids cannot be probed.
func Find[T any](ctx context.Context, s *Service, c *Caller, id string, get func(context.Context, string) (*T, error),
	resource func(*T) Resource, action string, notFound error) (*T, error) {
	if uuid.Validate(id) != nil {
		return nil, notFound
	}
	v, err := get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if err := s.Reach(ctx, c, resource(v), action, notFound); err != nil {
		return nil, err
	}
	return v, nil
}
