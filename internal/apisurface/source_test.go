package apisurface

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// moduleRoot is the repository root, two levels above this package.
const moduleRoot = "../.."

// goPackage is the parsed non-test files of one directory.
type goPackage struct {
	Name  string
	Files []*ast.File
}

// parsePackage parses the non-test Go files of dir (nil if there are none).
func parsePackage(t *testing.T, dir string) *goPackage {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pkg *goPackage
	fset := token.NewFileSet()
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if pkg == nil {
			pkg = &goPackage{Name: f.Name.Name}
		}
		pkg.Files = append(pkg.Files, f)
	}
	return pkg
}

// recvName is the type name of a method receiver (T, *T, T[K], *T[K, V]).
func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
