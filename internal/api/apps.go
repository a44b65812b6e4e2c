package api

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/appdata"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/store"
)

// App is an app as the API shows it.
type App struct {
	AppID             string    `json:"app_id"`
	Name              string    `json:"name"`
	Slug              string    `json:"slug"`
	AppSlug           string    `json:"app_slug" doc:"Same as slug"`
	Description       string    `json:"description"`
	Version           string    `json:"version"`
	Status            string    `json:"status" enum:"active,disabled"`
	MarketplaceStatus string    `json:"marketplace_status" enum:"private,published"`
	EntryPointURL     string    `json:"entry_point_url" doc:"The app's page in the web UI"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

func (a *API) appOut(app *store.App) App {
	entry := app.EntryPointURL
	if entry == "" {
		entry = a.Config.PublicURL + "/apps/" + app.ID
	}
	return App{AppID: app.ID, Name: app.Name, Slug: app.Slug, AppSlug: app.Slug, Description: app.Description,
		Version: app.Version, Status: app.Status, MarketplaceStatus: app.MarketplaceStatus, EntryPointURL: entry,
		CreatedAt: app.CreatedAt, UpdatedAt: app.UpdatedAt}
}

type appOutput struct{ Body App }

type appIDInput struct {
	AppID string `path:"app_id" doc:"App id"`
}

type listAppsOutput struct {
	Body struct {
		Apps   []App `json:"apps"`
		Total  int   `json:"total" doc:"Same as total_count"`
		Limit  int   `json:"limit"`
		Offset int   `json:"offset"`
		Page
	}
}

func (a *API) appsPage(in PageParams, list []store.App, total int) *listAppsOutput {
	out := &listAppsOutput{}
	b := &out.Body
	b.Apps, b.Total, b.Limit, b.Offset, b.Page = mapAll(list, a.appOut), total, in.Limit, in.Offset, in.page(total)
	return out
}

func (a *API) listApps(ctx context.Context, in *struct{ PageParams }) (*listAppsOutput, error) {
	list, total, err := a.Apps.Apps(ctx, mustCaller(ctx), in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return a.appsPage(in.PageParams, list, total), nil
}

func (a *API) marketplace(ctx context.Context, in *struct{ PageParams }) (*listAppsOutput, error) {
	list, total, err := a.Apps.Marketplace(ctx, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return a.appsPage(in.PageParams, list, total), nil
}

func (a *API) getApp(ctx context.Context, in *appIDInput) (*appOutput, error) {
	app, err := a.Apps.OwnedApp(ctx, mustCaller(ctx), in.AppID)
	if err != nil {
		return nil, err
	}
	return &appOutput{a.appOut(app)}, nil
}

// importOutput is an app with what its creation or import wrote.
type importOutput struct {
	Status int
	Body   struct {
		App
		Created        apps.Counts         `json:"created" doc:"Parts of each kind the app now has from the manifest"`
		Upgraded       bool                `json:"upgraded" doc:"An existing app of this slug was upgraded in place (200)"`
		WebhookSecrets []apps.IssuedSecret `json:"webhook_secrets" doc:"Signing secrets generated for webhook agents that had none (a manifest agent without agent_config.secret): shown this once"`
	}
}

func (a *API) importOut(r *apps.Imported) *importOutput {
	out := &importOutput{Status: http.StatusCreated}
	if r.Upgraded {
		out.Status = http.StatusOK
	}
	out.Body.App, out.Body.Created, out.Body.Upgraded = a.appOut(r.App), r.Created, r.Upgraded
	out.Body.WebhookSecrets = r.WebhookSecrets
	return out
}

type createAppInput struct {
	Body struct {
		Name         string         `json:"name,omitempty" required:"false" doc:"Required unless manifest_data has it"`
		Slug         string         `json:"slug,omitempty" required:"false" doc:"^[a-z0-9][a-z0-9-]{0,62}$, unique per user; required unless manifest_data has it"`
		Description  string         `json:"description,omitempty" required:"false"`
		ManifestData map[string]any `json:"manifest_data,omitempty" required:"false" doc:"A manifest: everything it declares is created with the app"`
	}
}

func (a *API) createApp(ctx context.Context, in *createAppInput) (*importOutput, error) {
	in2 := apps.CreateInput{Name: in.Body.Name, Slug: in.Body.Slug, Description: in.Body.Description}
	if in.Body.ManifestData != nil {
		in2.ManifestData = in.Body.ManifestData
	}
	r, err := a.Apps.Create(ctx, mustCaller(ctx), in2)
	if err != nil {
		return nil, err
	}
	return a.importOut(r), nil
}

type importManifestInput struct {
	ContentType string `header:"Content-Type"`
	RawBody     []byte `contentType:"application/yaml"`
}

func (a *API) importManifest(ctx context.Context, in *importManifestInput) (*importOutput, error) {
	m, err := apps.ParseManifest(in.RawBody, in.ContentType)
	if err != nil {
		return nil, err
	}
	r, err := a.Apps.Import(ctx, mustCaller(ctx), m)
	if err != nil {
		return nil, err
	}
	return a.importOut(r), nil
}

type updateAppInput struct {
	AppID string `path:"app_id" doc:"App id"`
	Body  struct {
		Name              *string `json:"name,omitempty" required:"false"`
		Description       *string `json:"description,omitempty" required:"false"`
		Status            *string `json:"status,omitempty" required:"false" enum:"active,disabled" doc:"A disabled app's agents refuse activation"`
		MarketplaceStatus *string `json:"marketplace_status,omitempty" required:"false" enum:"private,published" doc:"published: listed in the marketplace for every user to install"`
	}
}

func (a *API) updateApp(ctx context.Context, in *updateAppInput) (*appOutput, error) {
	b := in.Body
	app, err := a.Apps.UpdateApp(ctx, mustCaller(ctx), in.AppID, apps.AppPatch{
		Name: b.Name, Description: b.Description, Status: b.Status, MarketplaceStatus: b.MarketplaceStatus})
	if err != nil {
		return nil, err
	}
	return &appOutput{a.appOut(app)}, nil
}

func (a *API) deleteApp(ctx context.Context, in *appIDInput) (*struct{}, error) {
	return nil, a.Apps.DeleteApp(ctx, mustCaller(ctx), in.AppID)
}

type manifestOutput struct{ Body *apps.Manifest }

func (a *API) exportManifest(ctx context.Context, in *appIDInput) (*manifestOutput, error) {
	m, err := a.Apps.Export(ctx, mustCaller(ctx), in.AppID)
	if err != nil {
		return nil, err
	}
	return &manifestOutput{m}, nil
}

type installInput struct {
	AppID string `path:"app_id" doc:"The published app to install"`
	// Optional: without a body the copy keeps the source's slug and name.
	Body *struct {
		Slug string `json:"slug,omitempty" required:"false" doc:"A slug for the copy (default: the source's)"`
		Name string `json:"name,omitempty" required:"false" doc:"A name for the copy (default: the source's)"`
	}
}

// installOutput is the installed copy with what it was given, and where
// its webhook-runtime agents will send the installer's inputs.
type installOutput struct {
	Body struct {
		App
		Created           apps.Counts             `json:"created" doc:"Parts of each kind the copy has"`
		ExternalEndpoints []apps.ExternalEndpoint `json:"external_endpoints" doc:"The copy's webhook-runtime agents: their url is their code, and each activation's input goes there. Agents' webhook_url is never copied."`
		WebhookSecrets    []apps.IssuedSecret     `json:"webhook_secrets" doc:"Each webhook-runtime agent of the copy gets a signing secret of its own (the publisher's is never copied): shown this once"`
	}
}

func (a *API) installApp(ctx context.Context, in *installInput) (*installOutput, error) {
	var slug, name string
	if in.Body != nil {
		slug, name = in.Body.Slug, in.Body.Name
	}
	r, err := a.Apps.Install(ctx, mustCaller(ctx), in.AppID, slug, name)
	if err != nil {
		return nil, err
	}
	out := &installOutput{}
	out.Body.App, out.Body.Created, out.Body.ExternalEndpoints = a.appOut(r.App), r.Created, r.ExternalEndpoints
	out.Body.WebhookSecrets = r.WebhookSecrets
	return out, nil
}

// AppModel is a data model of an app: the data domain's own answer, under
// the name clients know it by.
type AppModel appdata.Model

type listModelsOutput struct {
	Body struct {
		Models []AppModel `json:"models"`
		Page
	}
}

func (a *API) listAppModels(ctx context.Context, in *appIDInput) (*listModelsOutput, error) {
	return a.modelsOf(ctx, in.AppID)
}

// rawJSONObject decodes a raw JSON body that must be an object.
func rawJSONObject(body []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, apperr.Invalid("body", "Malformed JSON body: expected a JSON object")
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// domainDecoded marks an operation whose raw JSON body the domain decodes
// and validates itself (to name the exact field at fault): huma would
// otherwise check a RawBody against a binary-string schema.
func domainDecoded(o huma.Operation) huma.Operation {
	o.SkipValidateBody = true
	return o
}

// documentRawBody replaces the binary request body huma documents for a
// RawBody operation with the schema of T under each content type.
func documentRawBody[T any](a *API, method, path string, contentTypes ...string) {
	schema := a.huma.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[T](), true, "")
	item := a.huma.OpenAPI().Paths[path]
	doc := map[string]*huma.Operation{http.MethodPost: item.Post, http.MethodPatch: item.Patch, http.MethodPut: item.Put}[method]
	doc.RequestBody.Required = true
	doc.RequestBody.Content = map[string]*huma.MediaType{}
	for _, ct := range contentTypes {
		doc.RequestBody.Content[ct] = &huma.MediaType{Schema: schema}
	}
}
