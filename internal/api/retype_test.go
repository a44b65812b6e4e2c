package api_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/quota"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestFieldRetype: a field's type changes only when the stored records'
// values convert (409 naming how many otherwise), over the API and in a
// manifest upgrade; values of another type (stored before) never make a
// sort or a filter fail.
func TestFieldRetype(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("retype@example.com")
		manifest := func(version, typ string) map[string]any {
			return map[string]any{"name": "Retype", "slug": "retype", "version": version, "models": []any{map[string]any{
				"slug": "things", "name": "Things", "fields": []any{map[string]any{"name": "n", "type": typ}, map[string]any{"name": "s", "type": "string"}}}}}
		}
		appID := e.importManifest(tok, manifest("1.0.0", "string")).expect(t, 201).str("app_id")
		base := "/api/v1/data/" + appID + "/things"
		for _, v := range []string{"abc", "def"} {
			e.do("POST", base, map[string]any{"data": map[string]any{"n": v}}, bearer(tok)).expect(t, 201)
		}
		e.do("POST", base, map[string]any{"data": map[string]any{"s": "no n"}}, bearer(tok)).expect(t, 201)

		intFields := []any{map[string]any{"name": "n", "type": "integer"}, map[string]any{"name": "s", "type": "string"}}
		e.do("PATCH", "/api/v1/data/"+appID+"/models/things", map[string]any{"fields": intFields}, bearer(tok)).
			expectError(t, 409, "ConflictError", "Cannot change field n of model things to integer: 2 stored records hold values that do not convert")
		e.importManifest(tok, manifest("1.1.0", "integer")).
			expectError(t, 409, "ConflictError", "Cannot change field n of model things to integer: 2 stored records")
		// json accepts anything; text is a string too.
		e.do("PATCH", "/api/v1/data/"+appID+"/models/things", map[string]any{"fields": []any{
			map[string]any{"name": "n", "type": "text"}, map[string]any{"name": "s", "type": "string"}}}, bearer(tok)).expect(t, 200)

		// Values stored under an older type (as before this check) are
		// sorted last and match no filter, on both databases.
		m, err := e.srv.Store.AppModelGetBySlug(context.Background(), appID, "things")
		require.NoError(t, err)
		m.Fields, _ = json.Marshal(intFields)
		require.NoError(t, e.srv.Store.AppModelUpdate(context.Background(), m))
		now := time.Now()
		app, err := e.srv.Store.AppGet(context.Background(), appID)
		require.NoError(t, err)
		require.NoError(t, e.srv.Store.RecordCreate(context.Background(), &store.Record{ID: uuid.Must(uuid.NewV7()).String(), ModelID: m.ID,
			AppID: appID, UserID: app.UserID, Data: json.RawMessage(`{"n":7}`), CreatedAt: now, UpdatedAt: now}, quota.Defaults().Data()))
		r := e.do("GET", base+"?sort=n", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, 7.0, field(r, "n")[0])
		r = e.do("GET", base+"?filter[n]=7", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, []any{7.0}, field(r, "n"))
		bools := []any{map[string]any{"name": "n", "type": "boolean"}, map[string]any{"name": "s", "type": "string"}}
		m.Fields, _ = json.Marshal(bools)
		require.NoError(t, e.srv.Store.AppModelUpdate(context.Background(), m))
		e.do("GET", base+"?sort=-n", nil, bearer(tok)).expect(t, 200)
		e.do("GET", base+"?filter[n]=true", nil, bearer(tok)).expect(t, 200)
	})
}
