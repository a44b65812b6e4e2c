package api

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/appdata"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/store"
)

// App data: models and records under /api/v1/data/{app_id}/…, and the data
// explorer's paths under /api/apps/{appId}/…, which answer the same.

// appOf resolves the caller's app (404 for another user's, or another app
// than a bound key's).
func (a *API) appOf(ctx context.Context, appID string) (*store.App, error) {
	return a.Apps.OwnedApp(ctx, mustCaller(ctx), appID)
}

func modelAnswer(m *appdata.Model) AppModel { return AppModel(*m) }

// DataRecord is one record of an app's data model.
type DataRecord struct {
	ItemID    string          `json:"item_id" format:"uuid"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	CreatedBy string          `json:"created_by" doc:"The user whose call or run created it"`
	Data      json.RawMessage `json:"data"`
}

func recordAnswer(r *appdata.Record) DataRecord {
	return DataRecord{ItemID: r.ItemID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, CreatedBy: r.CreatedBy, Data: r.Data}
}

type dataAppInput struct {
	AppID string `path:"app_id"`
}

func (a *API) listDataModels(ctx context.Context, in *dataAppInput) (*listModelsOutput, error) {
	return a.modelsOf(ctx, in.AppID)
}

func (a *API) modelsOf(ctx context.Context, appID string) (*listModelsOutput, error) {
	app, err := a.appOf(ctx, appID)
	if err != nil {
		return nil, err
	}
	models, err := a.Data.ListModels(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	out := &listModelsOutput{}
	out.Body.Models = make([]AppModel, len(models))
	for i := range models {
		out.Body.Models[i] = modelAnswer(&models[i])
	}
	out.Body.Page = Page{TotalCount: len(models)}
	return out, nil
}

// ModelInput creates a data model.
type ModelInput struct {
	Slug   string       `json:"slug" doc:"^[a-z0-9][a-z0-9-]{0,62}$; models is reserved"`
	Name   string       `json:"name,omitempty" required:"false"`
	Fields []apps.Field `json:"fields"`
}

type createModelInput struct {
	AppID   string `path:"app_id"`
	RawBody []byte
	Body    ModelInput
}

type modelOutput struct {
	Body AppModel
}

func (a *API) createDataModel(ctx context.Context, in *createModelInput) (*modelOutput, error) {
	app, err := a.appOf(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	m, err := a.Data.CreateModel(ctx, app.ID, in.RawBody)
	if err != nil {
		return nil, err
	}
	return &modelOutput{Body: modelAnswer(m)}, nil
}

type dataModelInput struct {
	AppID string `path:"app_id"`
	Slug  string `path:"slug"`
}

func (a *API) getDataModel(ctx context.Context, in *dataModelInput) (*modelOutput, error) {
	app, err := a.appOf(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	m, err := a.Data.GetModel(ctx, app.ID, in.Slug)
	if err != nil {
		return nil, err
	}
	return &modelOutput{Body: modelAnswer(m)}, nil
}

// ModelPatch changes a model's name or fields.
type ModelPatch struct {
	Name   string       `json:"name,omitempty" required:"false"`
	Fields []apps.Field `json:"fields,omitempty" required:"false" doc:"The whole new field list; stored records are not rewritten"`
}

type patchModelInput struct {
	AppID   string `path:"app_id"`
	Slug    string `path:"slug"`
	RawBody []byte
	Body    ModelPatch
}

func (a *API) patchDataModel(ctx context.Context, in *patchModelInput) (*modelOutput, error) {
	app, err := a.appOf(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	m, err := a.Data.PatchModel(ctx, app.ID, in.Slug, in.RawBody)
	if err != nil {
		return nil, err
	}
	return &modelOutput{Body: modelAnswer(m)}, nil
}

func (a *API) deleteDataModel(ctx context.Context, in *dataModelInput) (*struct{}, error) {
	app, err := a.appOf(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	return nil, a.Data.DeleteModel(ctx, app.ID, in.Slug)
}

// RecordQuery is a record list's query: the page, sort and filter[field]
// (read from the raw query: its names are the model's fields).
type RecordQuery struct {
	PageParams
	Sort   string `query:"sort" doc:"A field to order by, -field for descending (created_at works too); newest first by default"`
	filter map[string]string
}

// Resolve collects filter[field]=value parameters.
func (q *RecordQuery) Resolve(ctx huma.Context) []error {
	u := ctx.URL()
	for k, v := range u.Query() {
		if strings.HasPrefix(k, "filter[") && strings.HasSuffix(k, "]") && len(v) > 0 {
			if q.filter == nil {
				q.filter = map[string]string{}
			}
			q.filter[k[len("filter["):len(k)-1]] = v[0]
		}
	}
	return nil
}

type listRecordsInput struct {
	AppID string `path:"app_id"`
	Slug  string `path:"slug"`
	RecordQuery
}

type listRecordsOutput struct {
	Body struct {
		Items []DataRecord `json:"items"`
		Page
	}
}

func (a *API) listRecords(ctx context.Context, in *listRecordsInput) (*listRecordsOutput, error) {
	return a.recordsOf(ctx, in.AppID, in.Slug, &in.RecordQuery)
}

func (a *API) recordsOf(ctx context.Context, appID, slug string, q *RecordQuery) (*listRecordsOutput, error) {
	app, err := a.appOf(ctx, appID)
	if err != nil {
		return nil, err
	}
	page, err := a.Data.ListRecords(ctx, app.UserID, app.ID, slug, appdata.Query{Filter: q.filter, Sort: q.Sort, Limit: q.Limit, Offset: q.Offset})
	if err != nil {
		return nil, err
	}
	out := &listRecordsOutput{}
	out.Body.Items = make([]DataRecord, len(page.Items))
	for i := range page.Items {
		out.Body.Items[i] = recordAnswer(&page.Items[i])
	}
	out.Body.Page = Page{TotalCount: page.TotalCount, HasMore: page.HasMore}
	return out, nil
}

// RecordInput is a record's data.
type RecordInput struct {
	Data map[string]any `json:"data" doc:"The record's fields, checked against the model"`
}

type createRecordInput struct {
	AppID string `path:"app_id"`
	Slug  string `path:"slug"`
	Body  RecordInput
}

type recordOutput struct {
	Body DataRecord
}

func (a *API) createRecord(ctx context.Context, in *createRecordInput) (*recordOutput, error) {
	app, err := a.appOf(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	data, _ := json.Marshal(in.Body.Data)
	r, err := a.Data.CreateRecord(ctx, app.UserID, app.ID, in.Slug, data, mustCaller(ctx).UserID)
	if err != nil {
		return nil, err
	}
	return &recordOutput{Body: recordAnswer(r)}, nil
}

type recordIDInput struct {
	AppID  string `path:"app_id"`
	Slug   string `path:"slug"`
	ItemID string `path:"item_id"`
}

func (a *API) getRecord(ctx context.Context, in *recordIDInput) (*recordOutput, error) {
	app, err := a.appOf(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	r, err := a.Data.GetRecord(ctx, app.UserID, app.ID, in.Slug, in.ItemID)
	if err != nil {
		return nil, err
	}
	return &recordOutput{Body: recordAnswer(r)}, nil
}

type writeRecordInput struct {
	AppID  string `path:"app_id"`
	Slug   string `path:"slug"`
	ItemID string `path:"item_id"`
	Body   RecordInput
}

func (a *API) patchRecord(ctx context.Context, in *writeRecordInput) (*recordOutput, error) {
	return a.writeRecord(ctx, in, a.Data.PatchRecord)
}

func (a *API) putRecord(ctx context.Context, in *writeRecordInput) (*recordOutput, error) {
	return a.writeRecord(ctx, in, a.Data.PutRecord)
}

func (a *API) writeRecord(ctx context.Context, in *writeRecordInput,
	write func(ctx context.Context, userID, appID, slug, itemID string, data json.RawMessage) (*appdata.Record, error)) (*recordOutput, error) {
	app, err := a.appOf(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	data, _ := json.Marshal(in.Body.Data)
	r, err := write(ctx, app.UserID, app.ID, in.Slug, in.ItemID, data)
	if err != nil {
		return nil, err
	}
	return &recordOutput{Body: recordAnswer(r)}, nil
}

func (a *API) deleteRecord(ctx context.Context, in *recordIDInput) (*struct{}, error) {
	app, err := a.appOf(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	return nil, a.Data.DeleteRecord(ctx, app.UserID, app.ID, in.Slug, in.ItemID)
}

// The data explorer's paths (the spec's /api/apps prefix).

type explorerAppInput struct {
	AppID string `path:"appId"`
}

func (a *API) explorerModels(ctx context.Context, in *explorerAppInput) (*listModelsOutput, error) {
	return a.modelsOf(ctx, in.AppID)
}

type explorerModelInput struct {
	AppID     string `path:"appId"`
	ModelSlug string `path:"modelSlug"`
}

type fieldsOutput struct {
	Body struct {
		Fields []apps.Field `json:"fields"`
		Page
	}
}

func (a *API) explorerFields(ctx context.Context, in *explorerModelInput) (*fieldsOutput, error) {
	app, err := a.appOf(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	m, err := a.Data.GetModel(ctx, app.ID, in.ModelSlug)
	if err != nil {
		return nil, err
	}
	out := &fieldsOutput{}
	out.Body.Fields, out.Body.Page = m.Fields, Page{TotalCount: len(m.Fields)}
	return out, nil
}

type explorerRecordsInput struct {
	AppID     string `path:"appId"`
	ModelSlug string `path:"modelSlug"`
	RecordQuery
}

func (a *API) explorerRecords(ctx context.Context, in *explorerRecordsInput) (*listRecordsOutput, error) {
	return a.recordsOf(ctx, in.AppID, in.ModelSlug, &in.RecordQuery)
}
