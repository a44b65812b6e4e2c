package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/store"
)

// openLedger opens the database of a server started with env, to read
// its usage ledger beside it.
func openLedger(t *testing.T, env []string) *store.Store {
	t.Helper()
	var dsn, dir string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "AP_DATABASE_URL="); ok {
			dsn = v
		}
		if v, ok := strings.CutPrefix(kv, "AP_DATA_DIR="); ok {
			dir = v
		}
	}
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(dir, "agentplatform.db")
	}
	st, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// tokens are a usage's four counts, as the ledger keeps them.
func tokens(u llm.Usage) [4]int64 {
	return [4]int64{int64(u.PromptTokens), int64(u.CompletionTokens), int64(u.CacheReadTokens), int64(u.CacheWriteTokens)}
}

func add(a, b [4]int64) [4]int64 {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

// ledgerStep is an activation's step with what the ledger checks.
type ledgerStep struct {
	Index int        `json:"index"`
	Kind  string     `json:"kind"`
	Usage *llm.Usage `json:"usage"`
}

// checkLedger: after a kill -9 and the restart, the ledger holds exactly
// the provider-reported usage of the answers that were recorded: a record
// per recorded llm step of a tool loop (its index, its usage), a record
// per plain completion that ended with its answer (the output's usage),
// none for an answer the kill lost, none twice; all of them count to the
// platform's API key (a child's too: its parent's). It returns the sum of
// every count.
func checkLedger(t *testing.T, st *store.Store, p *platform, ids []string) [4]int64 {
	t.Helper()
	ctx := context.Background()
	var sum [4]int64
	keys := map[int64]bool{}
	for _, id := range ids {
		recs, err := st.UsageRecordsOf(ctx, id)
		require.NoError(t, err)
		var got, want [4]int64
		for _, r := range recs {
			got = add(got, [4]int64{r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens})
			keys[r.APIKeyID] = true
		}
		var s struct {
			Steps []ledgerStep `json:"steps"`
		}
		p.call("GET", "/api/v1/activations/"+id+"/steps?limit=100", p.key, nil, &s)
		var llmSteps []int
		for _, step := range s.Steps {
			if step.Kind == "llm" {
				llmSteps = append(llmSteps, step.Index)
				require.NotNil(t, step.Usage)
				want = add(want, tokens(*step.Usage))
			}
		}
		if len(llmSteps) > 0 {
			var indexes []int
			for _, r := range recs {
				require.NotNil(t, r.StepIndex, "%s: a tool loop's records are its steps'", id)
				indexes = append(indexes, *r.StepIndex)
			}
			require.ElementsMatch(t, llmSteps, indexes, "%s: one record per recorded llm step", id)
		} else {
			a := p.toolRun(id)
			var out struct {
				Usage *llm.Usage `json:"usage"`
			}
			_ = json.Unmarshal(a.Output, &out)
			if a.Status == "completed" && out.Usage != nil {
				require.Len(t, recs, 1, "%s: a completion's record", id)
				want = tokens(*out.Usage)
			} else {
				require.Empty(t, recs, "%s (%s): no answer recorded, no record", id, a.Status)
			}
		}
		require.Equal(t, want, got, "%s: the ledger is the recorded answers' usage", id)
		sum = add(sum, got)
	}
	require.Len(t, keys, 1, "every call counts to the one API key")
	require.False(t, keys[0], "every call counts to the API key")
	return sum
}
