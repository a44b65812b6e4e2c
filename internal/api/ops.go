package api

import (
	"context"
	"errors"
	"time"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/version"
)

type versionOutput struct {
	Body struct {
		Version    string `json:"version" example:"0.1.0"`
		APIVersion string `json:"api_version" example:"v1"`
	}
}

func (a *API) version(context.Context, *struct{}) (*versionOutput, error) {
	out := &versionOutput{}
	out.Body.Version, out.Body.APIVersion = version.Version, version.APIVersion
	return out, nil
}

type statusOutput struct {
	Body struct {
		Status string `json:"status" example:"ok"`
	}
}

func ok() *statusOutput {
	out := &statusOutput{}
	out.Body.Status = "ok"
	return out
}

func (a *API) healthz(context.Context, *struct{}) (*statusOutput, error) { return ok(), nil }

func (a *API) readyz(ctx context.Context, _ *struct{}) (*statusOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := a.Store.Ping(ctx)
	if err == nil {
		err = a.Store.Migrated(ctx)
	}
	switch {
	case err == nil:
		return ok(), nil
	case errors.Is(err, store.ErrMigrationsPending):
		logger(ctx).WarnContext(ctx, "not ready", "err", err)
		return nil, unavailable("Database migrations pending")
	default:
		logger(ctx).WarnContext(ctx, "not ready: database unreachable", "err", err)
		return nil, unavailable("Database unreachable")
	}
}

func unavailable(detail string) error {
	return &ErrorBody{Detail: detail, StatusCode: 503, ErrorType: string(apperr.Internal)}
}
