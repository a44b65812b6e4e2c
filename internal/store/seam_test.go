package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The store is the one place that knows SQL and dialects: code outside it
// (tests aside) asks Store.MultiNode rather than comparing dialects, never
// takes the raw handle, and only the queue takes River's transaction.
func TestSeam(t *testing.T) {
	t.Parallel()
	allowed := map[string]string{"RiverTx": "internal/queue/"}
	forbidden := map[string]bool{"DB": true, "Dialect": true, "RiverTx": true}
	var found []string
	for _, root := range []string{"../../internal", "../../cmd"} {
		require.NoError(t, filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel := filepath.ToSlash(strings.TrimPrefix(path, "../../"))
			if strings.HasPrefix(rel, "internal/store/") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !forbidden[sel.Sel.Name] || len(call.Args) > 1 {
					return true
				}
				if dir, ok := allowed[sel.Sel.Name]; ok && strings.HasPrefix(rel, dir) {
					return true
				}
				found = append(found, rel+": "+sel.Sel.Name)
				return true
			})
			return nil
		}))
	}
	require.Empty(t, found, "calls that belong in the store")
}
