package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	swaggerfiles "github.com/swaggo/files/v2"
)

// docsPage is Swagger UI from the swaggo/files module, embedded in the
// binary: the docs work with no internet.
const docsPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Agent Platform API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`

// docsInit starts Swagger UI. validatorUrl null: without it, a page served
// under any host but localhost shows a badge fetched from
// validator.swagger.io, which would send the document's URL to a third
// party.
const docsInit = `window.ui = SwaggerUIBundle({
  url: "/api/v1/openapi.json",
  dom_id: "#swagger-ui",
  validatorUrl: null,
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: "StandaloneLayout"
});
`

func (a *API) docsRoutes() {
	page := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(docsPage))
	}
	a.mux.HandleFunc("GET /docs", page)
	a.mux.HandleFunc("GET /api/v1/docs", page)
	a.mux.HandleFunc("GET /docs/init.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		_, _ = w.Write([]byte(docsInit))
	})
	a.mux.Handle("GET /docs/assets/", http.StripPrefix("/docs/assets/", http.FileServerFS(swaggerfiles.FS)))
	a.documentRoutes()
}

// documentRoutes serve the OpenAPI document, 3.1 and its 3.0 variant, in
// JSON and YAML at the paths huma would (huma's own routes are off:
// api.go), each made once, at its first request, from the finished
// document.
func (a *API) documentRoutes() {
	serve := func(path, contentType string, build func(*huma.OpenAPI) ([]byte, error)) {
		doc := sync.OnceValues(func() ([]byte, error) { return build(a.huma.OpenAPI()) })
		a.mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			b, err := doc()
			if err != nil {
				a.log.ErrorContext(r.Context(), "openapi: marshal the document", "path", path, "err", err)
				http.Error(w, "Internal error", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(b)
		})
	}
	serve("/api/v1/openapi.json", "application/openapi+json", func(o *huma.OpenAPI) ([]byte, error) { return json.Marshal(o) })
	serve("/api/v1/openapi.yaml", "application/openapi+yaml", (*huma.OpenAPI).YAML)
	serve("/api/v1/openapi-3.0.json", "application/openapi+json", func(o *huma.OpenAPI) ([]byte, error) { return openAPI30(o).Downgrade() })
	serve("/api/v1/openapi-3.0.yaml", "application/openapi+yaml", func(o *huma.OpenAPI) ([]byte, error) { return openAPI30(o).DowngradeYAML() })
}

// openAPI30 is the document to downgrade to OpenAPI 3.0, which has no
// `webhooks` keyword (validators refuse the document with it, and huma's
// Downgrade keeps it): they go under `x-webhooks`, the extension Redoc and
// other 3.0 tools read for webhooks, rather than being dropped, so a 3.0
// reader still learns what the platform POSTs out.
func openAPI30(o *huma.OpenAPI) *huma.OpenAPI {
	old := *o
	old.Extensions = maps.Clone(o.Extensions)
	if old.Extensions == nil {
		old.Extensions = map[string]any{}
	}
	old.Extensions["x-webhooks"] = o.Webhooks
	old.Webhooks = nil
	return &old
}
