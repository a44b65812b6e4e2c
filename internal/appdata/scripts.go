package appdata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentplatform/agentplatform/internal/apperr"
)

// Scripts is app data as a script's ctx.data sees it (runtimes.Data): JSON
// in and out, for the run's user and app.
type Scripts struct{ *Service }

// maxScriptPage bounds ctx.data.list's limit, as the API's.
const maxScriptPage = 1000

// CreateModel is ctx.data.createModel(slug, {name, fields}).
func (s Scripts) CreateModel(ctx context.Context, _, appID, slug string, def json.RawMessage) (json.RawMessage, error) {
	m := map[string]any{}
	if len(def) > 0 && string(def) != "null" {
		if err := json.Unmarshal(def, &m); err != nil {
			return nil, apperr.Invalid("definition", "Invalid value for field definition: expected {name, fields}")
		}
	}
	m["slug"] = slug
	raw, _ := json.Marshal(m)
	model, err := s.Service.CreateModel(ctx, appID, raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(model)
}

// List is ctx.data.list(slug, {filter, sort, limit, offset}).
func (s Scripts) List(ctx context.Context, userID, appID, slug string, query json.RawMessage) (json.RawMessage, error) {
	var q struct {
		Filter map[string]any `json:"filter"`
		Sort   string         `json:"sort"`
		Limit  *int           `json:"limit"`
		Offset int            `json:"offset"`
	}
	if len(query) > 0 && string(query) != "null" {
		if err := json.Unmarshal(query, &q); err != nil {
			return nil, apperr.Invalid("query", "Invalid value for field query: expected {filter, sort, limit, offset}")
		}
	}
	limit := 50
	if q.Limit != nil {
		limit = *q.Limit
	}
	if limit < 1 || limit > maxScriptPage || q.Offset < 0 {
		return nil, apperr.Invalid("limit", "Invalid value for field limit: 1 to 1000, and offset at least 0")
	}
	filter := make(map[string]string, len(q.Filter))
	for k, v := range q.Filter {
		if s, ok := v.(string); ok {
			filter[k] = s
		} else {
			filter[k] = fmt.Sprint(v)
		}
	}
	page, err := s.ListRecords(ctx, userID, appID, slug, Query{Filter: filter, Sort: q.Sort, Limit: limit, Offset: q.Offset})
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"items": page.Items, "total_count": page.TotalCount, "has_more": page.HasMore})
}

// Get is ctx.data.get(slug, item_id): null when absent.
func (s Scripts) Get(ctx context.Context, userID, appID, slug, itemID string) (json.RawMessage, error) {
	r, err := s.GetRecord(ctx, userID, appID, slug, itemID)
	if errors.Is(err, errRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// Create is ctx.data.create(slug, data).
func (s Scripts) Create(ctx context.Context, userID, appID, slug string, data json.RawMessage, createdBy string) (json.RawMessage, error) {
	r, err := s.CreateRecord(ctx, userID, appID, slug, data, createdBy)
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// Update is ctx.data.update(slug, item_id, data): a merge, as PATCH.
func (s Scripts) Update(ctx context.Context, userID, appID, slug, itemID string, data json.RawMessage) (json.RawMessage, error) {
	r, err := s.PatchRecord(ctx, userID, appID, slug, itemID, data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// Delete is ctx.data.delete(slug, item_id).
func (s Scripts) Delete(ctx context.Context, userID, appID, slug, itemID string) error {
	return s.DeleteRecord(ctx, userID, appID, slug, itemID)
}
