package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// The linters client developers run on the document (issue 17, Aim):
// Redocly's recommended rules and Spectral's spectral:oas, pinned in
// testdata/npm at the repository root and installed there by .ci/run
// (npm ci --prefix testdata/npm).

// lintDocuments are the documents linted, by the file name the linters
// report them under.
var lintDocuments = map[string]string{
	"openapi-3.1.json": "/api/v1/openapi.json",
	"openapi-3.0.json": "/api/v1/openapi-3.0.json",
}

// lintWarning is one warning a linter gives: the rule, and what it is
// about (the API path, or the document's top-level key).
type lintWarning struct{ linter, rule, subject string }

// allowedLintWarnings are the warnings the document keeps on purpose, on
// both variants, each with its reason. Any other warning, and any error,
// fails the test; so does an allowed warning no longer given (drop it).
var allowedLintWarnings = map[lintWarning]string{
	{"redocly", "info-license", "info"}: "the project states no license (no LICENSE file, none in DESIGN or README): none to name",
	{"redocly", "no-ambiguous-paths", "/api/v1/apps/{app_id}/agents/{agent_id}/activate"}: "the spec's routes; " +
		"/apps/{app_id}/agents/activations/{activation_id} has the literal segment and wins, so both resolve",
	{"redocly", "no-ambiguous-paths", "/api/v1/pipelines/{pipeline_id}/run"}: "the spec's routes; " +
		"/pipelines/runs/{run_id} has the literal segment and wins, so both resolve",
	{"redocly", "operation-2xx-response", "/api/v1/credentials/{app_id}/{provider}/authorize"}: "a browser navigation: it answers 302 to the provider",
	{"redocly", "operation-2xx-response", "/api/v1/oauth/callback"}:                            "the provider's redirect back: it answers 303 to return_to",
	{"redocly", "operation-2xx-response", "/api/v1/ws"}:                                        "a WebSocket upgrade answers 101",
	{"spectral", "operation-success-response", "/api/v1/ws"}:                                   "a WebSocket upgrade answers 101",
}

// npmBin is the path of a tool installed in testdata/npm; without it t
// skips, or fails under AP_TEST_REQUIRE_ALL=1 (CI).
func npmBin(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "testdata", "npm", "node_modules", ".bin", name))
	require.NoError(t, err)
	_, err = os.Stat(path)
	testdb.Need(t, err, name+" (npm ci --prefix testdata/npm)")
	return path
}

// TestOpenAPILint writes both documents (3.1 and its 3.0 variant) and
// lints them with Redocly and Spectral at once: no error, and no warning
// but the allowed ones.
func TestOpenAPILint(t *testing.T) {
	t.Parallel()
	redocly, spectral := npmBin(t, "redocly"), npmBin(t, "spectral")
	ruleset, err := filepath.Abs(filepath.Join("testdata", "spectral.yaml"))
	require.NoError(t, err)
	e := newEnv(t, store.SQLite, nil)
	dir := t.TempDir()
	var files []string
	for file, path := range lintDocuments {
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), e.do("GET", path, nil).expect(t, 200).Body, 0o600))
		files = append(files, file)
	}
	slices.Sort(files)

	for _, linter := range []struct {
		name string
		args []string
		read func([]byte) ([]lintProblem, error)
	}{
		{"redocly", append([]string{redocly, "lint", "--format=json", "--extends=recommended", "--max-problems=10000"}, files...), readRedocly},
		{"spectral", append([]string{spectral, "lint", "-r", ruleset, "-f", "json", "--quiet"}, files...), readSpectral},
	} {
		t.Run(linter.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, linter.args[0], linter.args[1:]...)
			// In the temp dir: no config file of the repository applies, and
			// problems name the files as written.
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			var exit *exec.ExitError
			require.True(t, runErr == nil || errors.As(runErr, &exit), "%s: %v\n%s", linter.name, runErr, stderr.String())
			problems, err := linter.read(stdout.Bytes())
			require.NoError(t, err, "%s: the report does not parse (exit: %v): %s\n%s", linter.name, runErr, stdout.String(), stderr.String())

			seen := map[lintWarning][]string{} // the files each allowed warning was given for
			var bad []string
			for _, p := range problems {
				w := lintWarning{linter.name, p.rule, p.subject()}
				switch _, allowed := allowedLintWarnings[w]; {
				case p.severity != "error" && p.severity != "warning":
					// Information and hints: advice, not a defect.
				case p.severity == "error" || !allowed:
					bad = append(bad, fmt.Sprintf("%s %s %s at %s: %s", p.file, p.severity, p.rule, strings.Join(p.path, " "), p.message))
				default:
					seen[w] = append(seen[w], p.file)
				}
			}
			require.Empty(t, bad, "%s: errors, or warnings not in allowedLintWarnings (fix them, or allow one with its reason)", linter.name)
			for w := range allowedLintWarnings {
				if w.linter == linter.name {
					got := slices.Compact(slices.Sorted(slices.Values(seen[w])))
					require.Equal(t, files, got, "%s is allowed but not given on each document (drop it from allowedLintWarnings if it is gone)", w)
				}
			}
		})
	}
}

// lintProblem is one problem a linter reports.
type lintProblem struct {
	file, severity, rule, message string
	// path is the JSON path to what it is about, e.g. [paths /api/v1/ws get responses].
	path []string
}

// subject is what p is about: the API path, or the top-level key.
func (p lintProblem) subject() string {
	switch {
	case len(p.path) > 1 && (p.path[0] == "paths" || p.path[0] == "webhooks"):
		return p.path[1]
	case len(p.path) > 0:
		return p.path[0]
	}
	return ""
}

// readRedocly reads `redocly lint --format=json` of several files: one
// report per file, one after the other.
func readRedocly(out []byte) ([]lintProblem, error) {
	var problems []lintProblem
	dec := json.NewDecoder(bytes.NewReader(out))
	for n := 0; ; n++ {
		var report struct {
			Problems []struct {
				RuleID   string `json:"ruleId"`
				Severity string `json:"severity"`
				Message  string `json:"message"`
				Location []struct {
					Source  struct{ Ref string } `json:"source"`
					Pointer string               `json:"pointer"`
				} `json:"location"`
			} `json:"problems"`
		}
		err := dec.Decode(&report)
		if errors.Is(err, io.EOF) && n > 0 {
			return problems, nil
		}
		if err != nil {
			return nil, err
		}
		for _, p := range report.Problems {
			lp := lintProblem{severity: p.Severity, rule: p.RuleID, message: p.Message}
			if lp.severity == "warn" {
				lp.severity = "warning"
			}
			if len(p.Location) > 0 {
				lp.file = filepath.Base(p.Location[0].Source.Ref)
				for _, seg := range strings.Split(strings.TrimPrefix(p.Location[0].Pointer, "#/"), "/") {
					lp.path = append(lp.path, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
				}
			}
			problems = append(problems, lp)
		}
	}
}

// readSpectral reads `spectral lint -f json`.
func readSpectral(out []byte) ([]lintProblem, error) {
	var report []struct {
		Code     string `json:"code"`
		Message  string `json:"message"`
		Path     []any  `json:"path"`
		Severity int    `json:"severity"`
		Source   string `json:"source"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		return nil, err
	}
	problems := make([]lintProblem, 0, len(report))
	for _, p := range report {
		// Spectral's severities: 0 error, 1 warning, 2 information, 3 hint.
		lp := lintProblem{file: filepath.Base(p.Source), severity: []string{"error", "warning", "info", "hint"}[min(max(p.Severity, 0), 3)],
			rule: p.Code, message: p.Message}
		for _, seg := range p.Path {
			lp.path = append(lp.path, fmt.Sprint(seg)) // array indexes are numbers
		}
		problems = append(problems, lp)
	}
	return problems, nil
}
