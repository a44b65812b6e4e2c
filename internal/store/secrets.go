package store

import "context"

// secretColumns lists every column that holds a sealed secret (see package
// secret); a new one must be added here so startup can check it.
var secretColumns = []struct{ table, column string }{
	{"apps", "webhook_secret_enc"},
	{"agents", "secret_enc"},
	{"authenticators", "client_secret_enc"},
	{"llm_providers", "api_key_enc"},
	{"connections", "access_token_enc"},
	{"connections", "refresh_token_enc"},
	{"oauth_states", "verifier_enc"},
}

// SecretKeyIDsInUse returns the ids of the keys that sealed stored secrets
// ("v1:<8-hex id>:…"), so startup can fail loudly when one is missing.
func (s *Store) SecretKeyIDsInUse(ctx context.Context) ([]string, error) {
	q := ""
	for i, c := range secretColumns {
		if i > 0 {
			q += " UNION "
		}
		q += `SELECT DISTINCT SUBSTR(` + c.column + `, 4, 8) FROM ` + c.table + ` WHERE ` + c.column + ` <> ''`
	}
	return s.strings(ctx, q)
}
