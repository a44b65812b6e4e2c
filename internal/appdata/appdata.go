// Package appdata owns apps' own data: data models (typed fields, declared
// in a manifest or created at run time) and their records, validated
// against the model's fields, listed with filters and an order that run in
// the database. Callers resolve the app first (apps.Service.OwnedApp gives
// another user's app as 404); every query here is still scoped to the app
// and its owner.
package appdata

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/limits"
	"github.com/agentplatform/agentplatform/internal/quota"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Service is the app data domain.
type Service struct {
	// Quotas bound models per app, fields per model and records per
	// model (the API and ctx.data alike); New sets the defaults.
	Quotas quota.Limits
	store  *store.Store
	now    func() time.Time
}

// New returns the service over st.
func New(st *store.Store) *Service {
	return &Service{store: st, now: store.Now, Quotas: quota.Defaults()}
}

// Model is a data model with its fields.
type Model struct {
	ID        string       `json:"id"`
	AppID     string       `json:"app_id"`
	Slug      string       `json:"slug"`
	Name      string       `json:"name"`
	Fields    []apps.Field `json:"fields"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
}

// Record is one record of a model.
type Record struct {
	ItemID    string          `json:"item_id"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	CreatedBy string          `json:"created_by"`
	Data      json.RawMessage `json:"data"`
}

// Query is a list's filters, order and page.
type Query struct {
	// Filter keeps records whose field equals the value (given as text,
	// read per the field's type).
	Filter map[string]string
	// Sort is a field, or -field for descending; "" is newest first.
	Sort          string
	Limit, Offset int
}

// Page is one page of a list.
type Page struct {
	Items      []Record
	TotalCount int
	HasMore    bool
}

var (
	errModelNotFound  = apperr.NotFoundf("Model not found")
	errRecordNotFound = apperr.NotFoundf("Record not found")
)

func modelOut(m *store.AppModel) *Model {
	out := &Model{ID: m.ID, AppID: m.AppID, Slug: m.Slug, Name: m.Name, Fields: []apps.Field{}, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
	_ = json.Unmarshal(m.Fields, &out.Fields) // validated when written
	return out
}

// decodeModel validates a model's JSON definition, fields within quota.
func (s *Service) decodeModel(def json.RawMessage) (*apps.Model, error) {
	m, err := decodeModel(def)
	if err != nil {
		return nil, err
	}
	if err := s.Quotas.Check(quota.Fields, len(m.Fields), "fields"); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeModel validates a model's JSON definition.
func decodeModel(def json.RawMessage) (*apps.Model, error) {
	var v any
	if len(bytes.TrimSpace(def)) == 0 {
		return nil, apperr.Invalid("body", "Missing request body: a model object is required")
	}
	if err := json.Unmarshal(def, &v); err != nil {
		return nil, apperr.Invalid("body", "Malformed JSON body: expected a model object")
	}
	return apps.DecodeModel(v)
}

// ListModels returns the app's models in creation order.
func (s *Service) ListModels(ctx context.Context, appID string) ([]Model, error) {
	ms, err := s.store.AppModelListByApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]Model, len(ms))
	for i := range ms {
		out[i] = *modelOut(&ms[i])
	}
	return out, nil
}

// CreateModel creates a model from its definition {slug, name, fields}.
func (s *Service) CreateModel(ctx context.Context, appID string, def json.RawMessage) (*Model, error) {
	m, err := s.decodeModel(def)
	if err != nil {
		return nil, err
	}
	fields, _ := json.Marshal(m.Fields)
	now := s.now()
	row := &store.AppModel{ID: uuid.Must(uuid.NewV7()).String(), AppID: appID, Slug: m.Slug, Name: m.Name, Fields: fields, CreatedAt: now, UpdatedAt: now}
	if err := s.store.AppModelCreate(ctx, row, s.Quotas.Models); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, apperr.Newf(apperr.Conflict, "A model with slug %q already exists in this app", m.Slug)
		}
		return nil, s.Quotas.FromStore(err)
	}
	return modelOut(row), nil
}

// GetModel returns the app's model slug.
func (s *Service) GetModel(ctx context.Context, appID, slug string) (*Model, error) {
	m, err := s.model(ctx, appID, slug)
	if err != nil {
		return nil, err
	}
	return modelOut(m), nil
}

func (s *Service) model(ctx context.Context, appID, slug string) (*store.AppModel, error) {
	m, err := s.store.AppModelGetBySlug(ctx, appID, slug)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errModelNotFound
	}
	return m, err
}

// PatchModel changes a model's name and fields ({name?, fields?}); the
// slug stays. Records already stored are not rewritten, so a field's type
// changes only when their values are of the new type (409 otherwise).
func (s *Service) PatchModel(ctx context.Context, appID, slug string, patch json.RawMessage) (*Model, error) {
	m, err := s.model(ctx, appID, slug)
	if err != nil {
		return nil, err
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(patch, &p); err != nil || p == nil {
		return nil, apperr.Invalid("body", "Malformed JSON body: expected an object")
	}
	cur := modelOut(m)
	merged := map[string]any{"slug": cur.Slug, "name": cur.Name, "fields": cur.Fields}
	for _, k := range []string{"name", "fields"} {
		if v, ok := p[k]; ok {
			merged[k] = v
		}
	}
	raw, _ := json.Marshal(merged)
	def, err := s.decodeModel(raw)
	if err != nil {
		return nil, err
	}
	if err := apps.CheckRetype(ctx, s.store, m, def.Fields); err != nil {
		return nil, err
	}
	m.Name = def.Name
	m.Fields, _ = json.Marshal(def.Fields)
	m.UpdatedAt = s.now()
	if err := s.store.AppModelUpdate(ctx, m); err != nil {
		return nil, err
	}
	return modelOut(m), nil
}

// DeleteModel deletes a model and its records.
func (s *Service) DeleteModel(ctx context.Context, appID, slug string) error {
	m, err := s.model(ctx, appID, slug)
	if err != nil {
		return err
	}
	return s.store.AppModelDelete(ctx, m.ID)
}

// CountRecords is how many of userID's records model m (one of
// ListModels's) holds: what an overview of the models (the data explorer)
// shows beside each, one indexed count per model rather than a page of
// each.
func (s *Service) CountRecords(ctx context.Context, userID string, m *Model) (int, error) {
	return s.store.RecordCount(ctx, userID, m.ID)
}

func recordOut(r *store.Record) Record {
	return Record{ItemID: r.ID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, CreatedBy: r.CreatedBy, Data: r.Data}
}

// ListRecords lists the user's records of model slug in app: a page of at
// most q.Limit records and limits.PageBytes of them (fewer, has_more true),
// from the API as from ctx.data.list.
func (s *Service) ListRecords(ctx context.Context, userID, appID, slug string, q Query) (*Page, error) {
	m, err := s.model(ctx, appID, slug)
	if err != nil {
		return nil, err
	}
	fields := fieldsOf(m)
	sq := store.RecordQuery{UserID: userID, ModelID: m.ID, Limit: q.Limit, Offset: q.Offset, Desc: true, MaxBytes: limits.PageBytes}
	names := make([]string, 0, len(q.Filter))
	for name := range q.Filter {
		names = append(names, name)
	}
	sort.Strings(names) // a stable first error
	for _, name := range names {
		f, ok := fields[name]
		path := "filter[" + name + "]"
		if !ok {
			return nil, apperr.Invalid(path, fmt.Sprintf("Invalid value for field %s: %q is not a field of model %s", path, name, m.Slug))
		}
		rf, err := filterOf(f, path, q.Filter[name])
		if err != nil {
			return nil, err
		}
		sq.Filters = append(sq.Filters, rf)
	}
	if q.Sort != "" {
		name := strings.TrimPrefix(q.Sort, "-")
		sq.Desc = strings.HasPrefix(q.Sort, "-")
		switch f, ok := fields[name]; {
		case name == "created_at":
		case !ok:
			return nil, apperr.Invalid("sort", fmt.Sprintf("Invalid value for field sort: %q is not a field of model %s", name, m.Slug))
		case f.Type == "json":
			return nil, apperr.Invalid("sort", "Invalid value for field sort: a json field has no order")
		default:
			sq.SortField, sq.SortCompare = name, compareOf(f)
		}
	}
	rows, total, err := s.store.RecordList(ctx, sq)
	if err != nil {
		return nil, err
	}
	page := &Page{Items: make([]Record, len(rows)), TotalCount: total, HasMore: q.Offset+len(rows) < total}
	for i := range rows {
		page.Items[i] = recordOut(&rows[i])
	}
	return page, nil
}

func compareOf(f apps.Field) string {
	switch f.Type {
	case "integer", "number":
		return store.CompareNumber
	case "boolean":
		return store.CompareBool
	}
	return store.CompareText
}

// filterOf reads a filter's text value as the field's type.
func filterOf(f apps.Field, path, v string) (store.RecordFilter, error) {
	rf := store.RecordFilter{Field: f.Name, Compare: compareOf(f), Value: v}
	bad := func(what string) error {
		return apperr.Invalid(path, fmt.Sprintf("Invalid value for field %s: %s", path, what))
	}
	switch f.Type {
	case "integer", "number":
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return rf, bad("expected a number")
		}
		rf.Value = n
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return rf, bad("expected true or false")
		}
		rf.Value = b
	case "json":
		return rf, bad("a json field cannot be filtered on")
	}
	return rf, nil
}

func fieldsOf(m *store.AppModel) map[string]apps.Field {
	var list []apps.Field
	_ = json.Unmarshal(m.Fields, &list)
	out := make(map[string]apps.Field, len(list))
	for _, f := range list {
		out[f.Name] = f
	}
	return out
}

// GetRecord returns the user's record itemID of model slug.
func (s *Service) GetRecord(ctx context.Context, userID, appID, slug, itemID string) (*Record, error) {
	m, err := s.model(ctx, appID, slug)
	if err != nil {
		return nil, err
	}
	r, err := s.record(ctx, userID, m, itemID)
	if err != nil {
		return nil, err
	}
	out := recordOut(r)
	return &out, nil
}

func (s *Service) record(ctx context.Context, userID string, m *store.AppModel, itemID string) (*store.Record, error) {
	if uuid.Validate(itemID) != nil {
		return nil, errRecordNotFound
	}
	r, err := s.store.RecordGet(ctx, userID, m.ID, itemID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errRecordNotFound
	}
	return r, err
}

// CreateRecord validates data against the model and stores it.
func (s *Service) CreateRecord(ctx context.Context, userID, appID, slug string, data json.RawMessage, createdBy string) (*Record, error) {
	m, err := s.model(ctx, appID, slug)
	if err != nil {
		return nil, err
	}
	if err := checkSize(len(data)); err != nil {
		return nil, err
	}
	obj, err := decodeData(data)
	if err != nil {
		return nil, err
	}
	clean, err := Validate(fieldList(m), obj)
	if err != nil {
		return nil, err
	}
	if err := checkSize(len(clean)); err != nil {
		return nil, err
	}
	now := s.now()
	r := &store.Record{ID: uuid.Must(uuid.NewV7()).String(), ModelID: m.ID, AppID: appID, UserID: userID, Data: clean,
		CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now}
	if err := s.store.RecordCreate(ctx, r, s.Quotas.Data()); err != nil {
		return nil, s.Quotas.FromStore(err)
	}
	out := recordOut(r)
	return &out, nil
}

// PatchRecord merges data into the record (a null removes a field) and
// validates the result.
func (s *Service) PatchRecord(ctx context.Context, userID, appID, slug, itemID string, data json.RawMessage) (*Record, error) {
	return s.rewrite(ctx, userID, appID, slug, itemID, data, true)
}

// PutRecord replaces the record's data.
func (s *Service) PutRecord(ctx context.Context, userID, appID, slug, itemID string, data json.RawMessage) (*Record, error) {
	return s.rewrite(ctx, userID, appID, slug, itemID, data, false)
}

func (s *Service) rewrite(ctx context.Context, userID, appID, slug, itemID string, data json.RawMessage, merge bool) (*Record, error) {
	m, err := s.model(ctx, appID, slug)
	if err != nil {
		return nil, err
	}
	if err := checkSize(len(data)); err != nil {
		return nil, err
	}
	r, err := s.record(ctx, userID, m, itemID)
	if err != nil {
		return nil, err
	}
	obj, err := decodeData(data)
	if err != nil {
		return nil, err
	}
	if merge {
		cur := map[string]any{}
		dec := json.NewDecoder(bytes.NewReader(r.Data))
		dec.UseNumber()
		_ = dec.Decode(&cur)
		for k, v := range obj {
			if v == nil {
				delete(cur, k)
			} else {
				cur[k] = v
			}
		}
		obj = cur
	}
	clean, err := Validate(fieldList(m), obj)
	if err != nil {
		return nil, err
	}
	if err := checkSize(len(clean)); err != nil {
		return nil, err // a merge may grow a record past the limit
	}
	r.Data, r.UpdatedAt = clean, s.now()
	if err := s.store.RecordUpdate(ctx, r, s.Quotas.Data()); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errRecordNotFound
		}
		return nil, s.Quotas.FromStore(err)
	}
	out := recordOut(r)
	return &out, nil
}

// DeleteRecord deletes the user's record.
func (s *Service) DeleteRecord(ctx context.Context, userID, appID, slug, itemID string) error {
	m, err := s.model(ctx, appID, slug)
	if err != nil {
		return err
	}
	if uuid.Validate(itemID) != nil {
		return errRecordNotFound
	}
	err = s.store.RecordDelete(ctx, userID, m.ID, itemID)
	if errors.Is(err, store.ErrNotFound) {
		return errRecordNotFound
	}
	return err
}

// checkSize refuses a record of n bytes of JSON over the API's body limit,
// whichever way it came (DESIGN: a record written from JavaScript obeys
// the API's body limit), before it is decoded.
func checkSize(n int) error {
	if n > limits.BodyBytes {
		return apperr.Newf(apperr.PayloadTooLarge, "A record is at most %d bytes of JSON (1 MiB); this one is %d bytes", limits.BodyBytes, n)
	}
	return nil
}

func fieldList(m *store.AppModel) []apps.Field {
	var list []apps.Field
	_ = json.Unmarshal(m.Fields, &list)
	return list
}

// decodeData reads a record's data: a JSON object, numbers kept exact.
func decodeData(data json.RawMessage) (map[string]any, error) {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, apperr.Invalid("data", "Invalid value for field data: expected an object")
	}
	return obj, nil
}
