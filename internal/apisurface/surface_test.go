package apisurface

import (
	"go/ast"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// exportBudget is the most exported identifiers each public package may
// have: the counts when the budget was set, so that the API does not grow
// unnoticed. Raise one only for an identifier a user calls or reads, and
// lower it when identifiers go. A new public package needs an entry.
// Before the surface was trimmed: collections 147, layout 63, vmem 170,
// vmem/shaders 1 (since moved to internal/shaders).
var exportBudget = map[string]int{
	"collections": 74, // 147 at first; the sharded types folded into Map and BTree, one batch pair, iterators for callbacks, then one WithHostCache for Map and BTree, All for keys and values, the leaf and extent sizes, Ring.Cap and CacheStats.HitRate out
	"layout":      8,  // 63 at first; the batcher, store log, node layout and planner moved to internal/lines, then the record arithmetic and type checks to internal/recs
	"vmem":        68, // 170 at first; kernels and plumbing to internal/kern, PoolSlice folded into Slice, then the raw block API to internal/block, Stats into Info, SetBatch for the SliceWriter, Backend and Placement as names
}

// totalBudget is the most exported identifiers of all public packages
// together: each one something a user calls or reads.
const totalBudget = 150

// publicPackages returns the directories (relative to the module root) of
// the module's importable packages: not internal, not commands, not in a
// module of their own.
func publicPackages(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(moduleRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(moduleRoot, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "internal") {
			return filepath.SkipDir
		}
		if rel != "." {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		pkg := parsePackage(t, p)
		if pkg != nil && pkg.Name != "main" {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// exported lists a package's exported identifiers: top-level constants,
// variables, functions and types, and the methods of exported types (as
// Type.Method). Struct fields are not counted. Build tags are ignored: a
// name declared in two files under opposite tags counts once.
func exported(pkg *goPackage) map[string]bool {
	names := map[string]bool{}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names[d.Name.Name] = true
					continue
				}
				if r := recvName(d.Recv.List[0].Type); ast.IsExported(r) {
					names[r+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names[n.Name] = true
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names[s.Name.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}

// TestExportBudget fails when a public package exports more identifiers
// than its budget, or when a public package has no budget.
func TestExportBudget(t *testing.T) {
	total := 0
	seen := map[string]bool{}
	for _, dir := range publicPackages(t) {
		seen[dir] = true
		n := len(exported(parsePackage(t, path.Join(moduleRoot, dir))))
		total += n
		budget, ok := exportBudget[dir]
		switch {
		case !ok:
			t.Errorf("public package %s (%d exported identifiers) has no entry in exportBudget", dir, n)
		case n > budget:
			t.Errorf("%s exports %d identifiers, over its budget of %d: move what only govram uses under internal/, or raise the budget for what users call", dir, n, budget)
		case n < budget:
			t.Logf("%s exports %d identifiers, under its budget of %d: lower the budget", dir, n, budget)
		}
	}
	for dir := range exportBudget {
		if !seen[dir] {
			t.Errorf("exportBudget lists %s, which is not a public package", dir)
		}
	}
	t.Logf("%d exported identifiers in all", total)
	if total > totalBudget {
		t.Errorf("the public packages export %d identifiers, over the budget of %d", total, totalBudget)
	}
}
