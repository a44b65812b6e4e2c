package clienttest_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// TestGeneratedClients generates a TypeScript and a Go client from the
// document a platform serves, compiles the programs of testdata/clients
// against them (once per language) and runs each through the README's flow
// and the example app on a fresh platform per database.
func TestGeneratedClients(t *testing.T) {
	t.Parallel()
	doc := filepath.Join(t.TempDir(), "openapi.json")
	require.NoError(t, os.WriteFile(doc, document(t), 0o600))
	flow := func(t *testing.T, name string, args ...string) {
		testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
			e := webtest.Start(t, d, nil)
			out, err := command(t.Context(), "", []string{"AP_URL=" + e.URL, "AP_MANIFEST=" + fromRoot(t, "examples/support-desk.json")},
				name, args...)
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "readme flow ok")
		})
	}
	t.Run("typescript", func(t *testing.T) {
		t.Parallel()
		flow(t, "node", typescriptClient(t, doc))
	})
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		flow(t, goClient(t, doc))
	})
}

// document is the OpenAPI document a fresh platform serves.
func document(t *testing.T) []byte {
	t.Helper()
	e := webtest.Start(t, store.SQLite, nil)
	res, err := http.Get(e.URL + "/api/v1/openapi.json")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return b
}

// need skips t when a tool the check runs is missing, or fails it under
// AP_TEST_REQUIRE_ALL=1 (.ci/run installs them).
func need(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	if testdb.RequireAll() {
		t.Fatalf("%s is required (AP_TEST_REQUIRE_ALL=1): %v", what, err)
	}
	t.Skipf("%s: %v", what, err)
}

func fromRoot(t *testing.T, rel string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "..", rel))
	require.NoError(t, err)
	return abs
}

// command runs name in dir (the current one if empty) with env added to
// this process's, and returns its output, stdout and stderr together.
func command(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}

// tsconfig compiles the TypeScript program strictly, and emits nothing
// when it does not type-check. No @types package is read: the program
// declares the little of Node it uses.
const tsconfig = `{
  "compilerOptions": {
    "strict": true,
    "noEmitOnError": true,
    "target": "es2022",
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "lib": ["es2022", "dom"],
    "types": [],
    "outDir": "out"
  },
  "files": ["readme.ts"]
}
`

// tsCasts are what the TypeScript program may not contain, looked for in
// its code (comments and string literals left out).
var tsCasts = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`\bas\s+[\w{(\[]`), "a type assertion (x as T)"},
	{regexp.MustCompile(`[=(,:]\s*<[\w.\[\]"' |]+>\s*[\w(]`), "a type assertion (<T>x)"},
	{regexp.MustCompile(`\bany\b`), "the type any"},
	{regexp.MustCompile(`[\w)\]]!(?:[^=]|$)`), "a non-null assertion (x!)"},
}

var (
	tsComment = regexp.MustCompile(`(?m)^\s*//.*$`)
	tsString  = regexp.MustCompile("\"(?:[^\"\\\\\n]|\\\\.)*\"|'(?:[^'\\\\\n]|\\\\.)*'|`(?:[^`\\\\]|\\\\.)*`")
)

// checkTypeScriptCasts fails t at each cast in src.
func checkTypeScriptCasts(t *testing.T, src string) {
	t.Helper()
	require.NotContains(t, src, "@ts-", "readme.ts: a ts-comment directive")
	code := tsString.ReplaceAllString(tsComment.ReplaceAllString(src, ""), `""`)
	for i, line := range strings.Split(code, "\n") {
		for _, c := range tsCasts {
			require.False(t, c.re.MatchString(line), "readme.ts: %s in %q (line %d once comments are left out)", c.what, line, i+1)
		}
	}
}

// typescriptClient generates the TypeScript client from doc, type-checks
// and compiles testdata/clients/readme.ts with it and returns the script
// node runs.
func typescriptClient(t *testing.T, doc string) string {
	t.Helper()
	modules := fromRoot(t, "testdata/npm/node_modules")
	_, err := os.Stat(filepath.Join(modules, ".bin", "tsc"))
	need(t, err, "testdata/npm/node_modules (npm ci --prefix testdata/npm)")
	_, err = exec.LookPath("node")
	need(t, err, "node")

	src, err := os.ReadFile(fromRoot(t, "testdata/clients/readme.ts"))
	require.NoError(t, err)
	checkTypeScriptCasts(t, string(src))
	manifest, err := os.ReadFile(fromRoot(t, "examples/support-desk.json"))
	require.NoError(t, err)

	dir := t.TempDir()
	require.NoError(t, os.Symlink(modules, filepath.Join(dir, "node_modules")))
	for name, content := range map[string]string{
		"package.json":  `{"type": "module"}`,
		"tsconfig.json": tsconfig,
		"readme.ts":     string(src),
		// The example pasted into a module, checked against the document's
		// Manifest by satisfies (not a cast: the literal keeps its own type).
		"support-desk.ts": "// examples/support-desk.json\nimport type { components } from \"./schema.js\";\n\n" +
			"export const manifest = " + strings.TrimSpace(string(manifest)) + " satisfies components[\"schemas\"][\"Manifest\"];\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	out, err := command(t.Context(), dir, nil, filepath.Join(modules, ".bin", "openapi-typescript"), doc, "-o", "schema.d.ts")
	require.NoError(t, err, "openapi-typescript: %s", out)
	out, err = command(t.Context(), dir, nil, filepath.Join(modules, ".bin", "tsc"), "-p", "tsconfig.json")
	require.NoError(t, err, "tsc --strict on testdata/clients/readme.ts and the generated client:\n%s", out)
	return filepath.Join(dir, "out", "readme.js")
}

// goClient generates the Go client from doc with the oapi-codegen pinned
// by testdata/clients/go/go.mod (a module of its own, so that neither the
// generator nor its runtime joins the platform's build list), builds the
// program of that module with it and returns the binary.
func goClient(t *testing.T, doc string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	need(t, err, "go")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(fromRoot(t, "testdata/clients/go"))))
	// The copy's go.mod and go.sum are the committed ones, read-only; a
	// go.work above must not pull it into another workspace.
	env := []string{"GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly")}
	out, err := command(t.Context(), dir, env, goBin, "mod", "download")
	need(t, err, "the modules of testdata/clients/go (oapi-codegen, its runtime: go -C testdata/clients/go mod download)\n"+string(out))

	require.NoError(t, os.Mkdir(filepath.Join(dir, "api"), 0o700))
	out, err = command(t.Context(), dir, env, goBin, "tool", "oapi-codegen", "-generate", "types,client", "-package", "api",
		"-o", filepath.Join("api", "client.gen.go"), doc)
	require.NoError(t, err, "oapi-codegen: %s", out)
	checkGoCasts(t, dir)
	out, err = command(t.Context(), dir, env, goBin, "build", "-o", "clientcheck", ".")
	require.NoError(t, err, "go build of testdata/clients/go with the generated client:\n%s", out)
	return filepath.Join(dir, "clientcheck")
}

// checkGoCasts fails t at each type assertion in the Go program, and at
// each conversion to a type of the generated client or of its runtime.
func checkGoCasts(t *testing.T, dir string) {
	t.Helper()
	fset := token.NewFileSet()
	gen, err := parser.ParseFile(fset, filepath.Join(dir, "api", "client.gen.go"), nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	docTypes := map[string]bool{}
	for _, decl := range gen.Decls {
		if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				docTypes[s.(*ast.TypeSpec).Name.Name] = true
			}
		}
	}
	prog, err := parser.ParseFile(fset, filepath.Join(dir, "main.go"), nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	var bad []string
	ast.Inspect(prog, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.TypeAssertExpr:
			bad = append(bad, fset.Position(x.Pos()).String()+": a type assertion")
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "api" && docTypes[sel.Sel.Name] || pkg.Name == "openapi_types") {
					bad = append(bad, fset.Position(x.Pos()).String()+": a conversion to "+pkg.Name+"."+sel.Sel.Name)
				}
			}
		}
		return true
	})
	require.Empty(t, bad, "testdata/clients/go/main.go casts")
}
