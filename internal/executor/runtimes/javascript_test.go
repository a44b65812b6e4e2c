package runtimes_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/executor/runtimes"
	"github.com/agentplatform/agentplatform/internal/quota"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// jsRun runs code as a function of a fresh user's app on j and answers
// its output.
func jsRun(t *testing.T, j *runtimes.JavaScript, userID, appID, code string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, _ := json.Marshal(map[string]string{"runtime": "javascript", "code": code})
	res, err := j.Execute(ctx, &executor.Run{Kind: executor.Execution, ID: uuid.NewString(), UserID: userID, AppID: appID,
		FunctionID: uuid.NewString(), Config: cfg, Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	return res.Output
}

// TestStorageListAnswersBoundedPages: over values that add up to more than
// a page, ctx.storage.list answers at most PageBytes, {limit} fewer keys,
// and {after} walks the rest until an empty page.
func TestStorageListAnswersBoundedPages(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		st := testdb.Open(t, d)
		u, app := testdb.UserApp(t, st)
		j := &runtimes.JavaScript{Store: st, PageBytes: 10 << 10, Quotas: quota.Defaults()}

		out := jsRun(t, j, u.ID, app.ID, `async function run(input, ctx) {
			const v = "x".repeat(3000);
			for (let i = 0; i < 7; i++) await ctx.storage.set("big/" + i, v);
			await ctx.storage.set("small", 1);
			const first = await ctx.storage.list("big/");
			const pages = [];
			let after = "";
			for (let i = 0; i < 20; i++) {
				const page = await ctx.storage.list("big/", {after});
				if (!page.length) break;
				pages.push(page.map((it) => it.key));
				after = page[page.length - 1].key;
			}
			const two = await ctx.storage.list("", {limit: 2});
			let bad;
			try { await ctx.storage.list("", {limit: 0}); } catch (e) { bad = e.name + ": " + e.message; }
			return {first: first.length, pages, two: two.map((it) => it.key), bad};
		}`)
		require.JSONEq(t, `{"first": 3, "pages": [["big/0", "big/1", "big/2"], ["big/3", "big/4", "big/5"], ["big/6"]],
			"two": ["big/0", "big/1"], "bad": "ValidationError: limit is 1 to 1000"}`, string(out))
	})
}
