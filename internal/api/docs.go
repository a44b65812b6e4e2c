package api

import (
	"net/http"

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
}
