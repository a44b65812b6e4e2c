package clienttest_test

import (
	"context"
	"fmt"
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

// typeScriptCasts lists the casts in src, each with its line.
func typeScriptCasts(src string) []string {
	var found []string
	if strings.Contains(src, "@ts-") {
		found = append(found, "a ts-comment directive (@ts-…)")
	}
	code := tsString.ReplaceAllString(tsComment.ReplaceAllString(src, ""), `""`)
	for i, line := range strings.Split(code, "\n") {
		for _, c := range tsCasts {
			if c.re.MatchString(line) {
				found = append(found, fmt.Sprintf("line %d: %s in %q (comments and strings left out)", i+1, c.what, line))
			}
		}
	}
	return found
}

// typescriptClient generates the TypeScript client from doc, type-checks
// and compiles testdata/clients/readme.ts with it and returns the script
// node runs.
func typescriptClient(t *testing.T, doc string) string {
	t.Helper()
	modules := fromRoot(t, "testdata/npm/node_modules")
	_, err := os.Stat(filepath.Join(modules, ".bin", "tsc"))
	testdb.Need(t, err, "testdata/npm/node_modules (npm ci --prefix testdata/npm)")
	_, err = exec.LookPath("node")
	testdb.Need(t, err, "node")

	src, err := os.ReadFile(fromRoot(t, "testdata/clients/readme.ts"))
	require.NoError(t, err)
	require.Empty(t, typeScriptCasts(string(src)), "testdata/clients/readme.ts casts")
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
	testdb.Need(t, err, "go")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(fromRoot(t, "testdata/clients/go"))))
	// The copy's go.mod and go.sum are the committed ones, read-only; a
	// go.work above must not pull it into another workspace.
	env := []string{"GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly")}
	out, err := command(t.Context(), dir, env, goBin, "mod", "download")
	testdb.Need(t, err, "the modules of testdata/clients/go (oapi-codegen, its runtime: go -C testdata/clients/go mod download)\n"+string(out))

	require.NoError(t, os.Mkdir(filepath.Join(dir, "api"), 0o700))
	out, err = command(t.Context(), dir, env, goBin, "tool", "oapi-codegen", "-generate", "types,client", "-package", "api",
		"-o", filepath.Join("api", "client.gen.go"), doc)
	require.NoError(t, err, "oapi-codegen: %s", out)
	gen, err := os.ReadFile(filepath.Join(dir, "api", "client.gen.go"))
	require.NoError(t, err)
	prog, err := os.ReadFile(filepath.Join(dir, "main.go"))
	require.NoError(t, err)
	require.Empty(t, goCasts(t, string(gen), string(prog)), "testdata/clients/go/main.go casts")
	out, err = command(t.Context(), dir, env, goBin, "build", "-o", "clientcheck", ".")
	require.NoError(t, err, "go build of testdata/clients/go with the generated client:\n%s", out)
	return filepath.Join(dir, "clientcheck")
}

// goCasts lists the type assertions in the Go program prog, and its
// conversions to a type of the generated client gen or of its runtime.
func goCasts(t *testing.T, gen, prog string) []string {
	t.Helper()
	fset := token.NewFileSet()
	g, err := parser.ParseFile(fset, "client.gen.go", gen, parser.SkipObjectResolution)
	require.NoError(t, err)
	docTypes := map[string]bool{}
	for _, decl := range g.Decls {
		if d, ok := decl.(*ast.GenDecl); ok && d.Tok == token.TYPE {
			for _, s := range d.Specs {
				docTypes[s.(*ast.TypeSpec).Name.Name] = true
			}
		}
	}
	p, err := parser.ParseFile(fset, "main.go", prog, parser.SkipObjectResolution)
	require.NoError(t, err)
	var found []string
	ast.Inspect(p, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.TypeAssertExpr:
			found = append(found, fset.Position(x.Pos()).String()+": a type assertion")
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "api" && docTypes[sel.Sel.Name] || pkg.Name == "openapi_types") {
					found = append(found, fset.Position(x.Pos()).String()+": a conversion to "+pkg.Name+"."+sel.Sel.Name)
				}
			}
		}
		return true
	})
	return found
}

// TestCastChecks: the checks find the casts they are there to refuse, and
// nothing in code that has none.
func TestCastChecks(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"const a = b as Foo;", "const a = <Foo>b;", "let x: any = 1;", "f(x!.y);", "g(a!);",
		"// @ts-ignore\nconst a = 1;", "const a = b as const;",
	} {
		require.NotEmpty(t, typeScriptCasts(src), "%q", src)
	}
	require.Empty(t, typeScriptCasts(`// as any, as T, x!: in a comment
const ok = createClient<paths, "application/json">({ baseUrl });
if (!a || a !== b) throw new Error("has as any! <T>x");
const t = `+"`${x} as any!`"+`;
function f<T>(v: T): T { return v; }`))

	gen := "package api\ntype Step struct{}\ntype StepType string\nfunc NewClient() {}\n"
	for _, prog := range []string{
		"package main\nfunc f(v any) { _ = v.(api.Step) }",
		"package main\nfunc f(v any) { switch v.(type) {} }",
		"package main\nfunc f(s string) { _ = api.StepType(s) }",
		"package main\nfunc f(s string) { _ = openapi_types.Email(s) }",
	} {
		require.NotEmpty(t, goCasts(t, gen, prog), "%q", prog)
	}
	require.Empty(t, goCasts(t, gen, "package main\nfunc f() { api.NewClient(); _ = api.Step{}; _ = fmt.Sprint(1) }"))
}
