package store

import (
	"context"
	"encoding/json"
)

// StorageItem is one key of an app's storage (ctx.storage).
type StorageItem struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// StorageGet returns the value of key in the user's app, or ErrNotFound.
func (s *Store) StorageGet(ctx context.Context, userID, appID, key string) (json.RawMessage, error) {
	var v []byte
	err := s.reader().QueryRowContext(ctx, `SELECT value FROM app_storage WHERE app_id = $1 AND user_id = $2 AND key = $3`,
		appID, userID, key).Scan(&v)
	return v, mapErr(err)
}

// StorageList returns a page of the user's app's keys that start with
// prefix and come after after ("" from the first), in key order: at most
// limit keys, and no more once their keys and values pass maxBytes (the
// first always comes). The database sums the sizes, so the values past the
// page never leave it.
func (s *Store) StorageList(ctx context.Context, userID, appID, prefix, after string, limit, maxBytes int) ([]StorageItem, error) {
	size := s.d.octets("key") + " + " + s.d.octets("value")
	// A range, not LIKE: a prefix holding % or _ means itself.
	return queryAll(ctx, s.reader(), func(row interface{ Scan(...any) error }, it *StorageItem) error {
		var v []byte
		err := row.Scan(&it.Key, &v)
		it.Value = v
		return err
	}, `SELECT key, value FROM (
			SELECT key, value, ROW_NUMBER() OVER w AS n, SUM(`+size+` + 20) OVER w AS bytes FROM (
				SELECT key, value FROM app_storage WHERE app_id = $1 AND user_id = $2 AND key >= $3 AND ($4 = '' OR key < $4) AND key > $5
				ORDER BY key LIMIT $6
			) keys WINDOW w AS (ORDER BY key ROWS UNBOUNDED PRECEDING)
		) page WHERE n = 1 OR bytes <= $7 ORDER BY key`,
		appID, userID, prefix, prefixEnd(prefix), after, limit, maxBytes)
}

// prefixEnd is the least string greater than every string starting with
// prefix ("" when there is none: no upper bound).
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
