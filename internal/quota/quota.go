// Package quota holds the per-user and per-app quotas (DESIGN §4 Abuse and
// limits): their defaults, which a normal app never meets, and the one
// refusal text, a QuotaExceededError naming the quota and its AP_QUOTA_*
// variable (413 for a quota of bytes, 409 for a quota of things).
//
// The checks live where the writes do, so that the API and JavaScript's
// ctx.storage and ctx.data meet the same ones: counters kept in the write's
// own transaction (store: storage keys and bytes per app, records and
// their bytes per model), counts of what a definition holds (appdata,
// apps, pipeline: models per app, fields per model, steps per pipeline).
package quota

import (
	"errors"
	"fmt"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Limits are the quotas in force.
type Limits struct {
	StorageBytes  int64 // AP_QUOTA_STORAGE_BYTES: ctx.storage bytes per app
	StorageKeys   int64 // AP_QUOTA_STORAGE_KEYS: ctx.storage keys per app
	Records       int64 // AP_QUOTA_RECORDS: app data records per model
	RecordBytes   int64 // AP_QUOTA_RECORD_BYTES: app data bytes per model
	Models        int64 // AP_QUOTA_MODELS: data models per app
	Fields        int64 // AP_QUOTA_FIELDS: fields per data model
	PipelineSteps int64 // AP_QUOTA_PIPELINE_STEPS: steps per pipeline
	APIKeys       int64 // AP_QUOTA_API_KEYS: API keys per user
}

// Defaults are the DESIGN's quotas.
func Defaults() Limits {
	return Limits{StorageBytes: 100 << 20, StorageKeys: 100_000, Records: 1_000_000, RecordBytes: 1 << 30,
		Models: 200, Fields: 200, PipelineSteps: 100, APIKeys: 1_000}
}

// Quota names one quota.
type Quota struct {
	What  string // what is counted, e.g. "ctx.storage bytes"
	Per   string // what it is counted per: app, model, pipeline, user
	Env   string // its variable
	Bytes bool   // a quota of bytes (413) rather than of things (409)
}

// The quotas.
var (
	StorageBytes  = Quota{"ctx.storage bytes", "app", "AP_QUOTA_STORAGE_BYTES", true}
	StorageKeys   = Quota{"ctx.storage keys", "app", "AP_QUOTA_STORAGE_KEYS", false}
	Records       = Quota{"records", "model", "AP_QUOTA_RECORDS", false}
	RecordBytes   = Quota{"bytes of records", "model", "AP_QUOTA_RECORD_BYTES", true}
	Models        = Quota{"data models", "app", "AP_QUOTA_MODELS", false}
	Fields        = Quota{"fields", "model", "AP_QUOTA_FIELDS", false}
	PipelineSteps = Quota{"steps", "pipeline", "AP_QUOTA_PIPELINE_STEPS", false}
	APIKeys       = Quota{"API keys", "user", "AP_QUOTA_API_KEYS", false}
)

// Setting is one quota and where its limit is kept.
type Setting struct {
	Quota Quota
	Limit *int64
}

// Settings are every quota with its limit in l: the one list that the
// configuration reads (AP_QUOTA_*) and Of looks a quota up in.
func (l *Limits) Settings() []Setting {
	return []Setting{{StorageBytes, &l.StorageBytes}, {StorageKeys, &l.StorageKeys}, {Records, &l.Records},
		{RecordBytes, &l.RecordBytes}, {Models, &l.Models}, {Fields, &l.Fields},
		{PipelineSteps, &l.PipelineSteps}, {APIKeys, &l.APIKeys}}
}

// Of is q's limit.
func (l Limits) Of(q Quota) int64 {
	for _, s := range l.Settings() {
		if s.Quota == q {
			return *s.Limit
		}
	}
	return 0
}

// Refuse is the refusal of q; where, when set, names the place at fault
// (a manifest path such as models[3].fields).
func (l Limits) Refuse(q Quota, where string) *apperr.Error {
	detail := fmt.Sprintf("Quota exceeded: at most %d %s per %s (%s)", l.Of(q), q.What, q.Per, q.Env)
	if where != "" {
		detail = fmt.Sprintf("Quota exceeded at %s: at most %d %s per %s (%s)", where, l.Of(q), q.What, q.Per, q.Env)
	}
	return &apperr.Error{Kind: apperr.QuotaExceeded, Detail: detail, Field: where, TooLarge: q.Bytes}
}

// Check refuses n of q when it is over the limit.
func (l Limits) Check(q Quota, n int, where string) error {
	if int64(n) > l.Of(q) {
		return l.Refuse(q, where)
	}
	return nil
}

// FromStore turns the store's quota refusal (store.QuotaError) into the
// public one; other errors pass.
func (l Limits) FromStore(err error) error {
	var qe *store.QuotaError
	if !errors.As(err, &qe) {
		return err
	}
	if q, ok := ofStore[qe.Name]; ok {
		return l.Refuse(q, "")
	}
	return err
}

// ofStore names the quotas the store counts.
var ofStore = map[string]Quota{store.QuotaStorageKeys: StorageKeys, store.QuotaStorageBytes: StorageBytes,
	store.QuotaRecords: Records, store.QuotaRecordBytes: RecordBytes, store.QuotaModels: Models, store.QuotaAPIKeys: APIKeys}

// Storage is what the store needs for ctx.storage writes.
func (l Limits) Storage() store.StorageLimits {
	return store.StorageLimits{Keys: l.StorageKeys, Bytes: l.StorageBytes}
}

// Data is what the store needs for record writes.
func (l Limits) Data() store.RecordLimits {
	return store.RecordLimits{Count: l.Records, Bytes: l.RecordBytes}
}
