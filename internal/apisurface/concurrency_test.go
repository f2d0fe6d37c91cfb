package apisurface

import (
	"go/ast"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	backticked = regexp.MustCompile("`([A-Za-z]+)`")
	possessive = regexp.MustCompile(`\b[A-Z][A-Za-z]*'s\b`)
	capsWord   = regexp.MustCompile(`\b[A-Z][A-Za-z]+\b`)
)

// TestConcurrencyTables: docs/guide.md's concurrency table and each
// container's doc comment ("at the same time" and "alone" lines) name the
// same methods, and every exported method of the container is in exactly
// one of the two.
func TestConcurrencyTables(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]*goPackage{}
	for _, c := range containers {
		if pkgs[c.pkg] == nil {
			pkgs[c.pkg] = parsePackage(t, filepath.Join(moduleRoot, c.pkg))
		}
		pkg := pkgs[c.pkg]
		gTogether, gAlone, ok := guideRow(string(guide), c.pkg+"."+c.name)
		if !ok {
			t.Errorf("docs/guide.md: no concurrency row for %s.%s", c.pkg, c.name)
			continue
		}
		dTogether, dAlone, ok := docLines(pkg, c.name)
		if !ok {
			t.Errorf("%s.%s: its doc comment has no \"at the same time:\" and \"alone:\" lines", c.pkg, c.name)
			continue
		}
		if !slices.Equal(gTogether, dTogether) || !slices.Equal(gAlone, dAlone) {
			t.Errorf("%s: the guide says together %v, alone %v; the doc comment together %v, alone %v", c.name, gTogether, gAlone, dTogether, dAlone)
		}
		declared := declaredNames(pkg)
		for i := range c.typ.NumMethod() {
			m := c.typ.Method(i).Name
			in := 0
			if slices.Contains(gTogether, m) {
				in++
			}
			if slices.Contains(gAlone, m) {
				in++
			}
			if in != 1 {
				t.Errorf("%s.%s is in %d columns of the concurrency table, want 1", c.name, m, in)
			}
		}
		for _, n := range append(slices.Clone(gTogether), gAlone...) {
			if _, ok := c.typ.MethodByName(n); !ok && !declared[n] {
				t.Errorf("%s's concurrency row names %s, which %s does not declare", c.name, n, c.pkg)
			}
		}
	}
}

// guideRow returns the sorted names of the two columns of name's row.
func guideRow(guide, name string) (together, alone []string, ok bool) {
	for line := range strings.Lines(guide) {
		if !strings.HasPrefix(line, "| `"+name+"` |") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 3 {
			return nil, nil, false
		}
		return names(backticked, cells[1]), names(backticked, cells[2]), true
	}
	return nil, nil, false
}

// docLines returns the sorted names of the "at the same time:" and
// "alone:" lines of type name's doc comment.
func docLines(pkg *goPackage, name string) (together, alone []string, ok bool) {
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			g, isGen := d.(*ast.GenDecl)
			if !isGen {
				continue
			}
			for _, sp := range g.Specs {
				ts, isType := sp.(*ast.TypeSpec)
				if !isType || ts.Name.Name != name {
					continue
				}
				doc := ts.Doc
				if doc == nil {
					doc = g.Doc
				}
				if doc == nil {
					return nil, nil, false
				}
				var a, b bool
				for line := range strings.Lines(doc.Text()) {
					line = strings.TrimSpace(line)
					if rest, found := strings.CutPrefix(line, "- at the same time:"); found {
						together, a = names(capsWord, rest), true
					}
					if rest, found := strings.CutPrefix(line, "- alone:"); found {
						alone, b = names(capsWord, rest), true
					}
				}
				return together, alone, a && b
			}
		}
	}
	return nil, nil, false
}

// names returns the sorted, distinct words re finds in s, after dropping
// possessives ("a Writer's Flush" names Flush).
func names(re *regexp.Regexp, s string) []string {
	s = possessive.ReplaceAllString(s, "")
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		out = append(out, m[len(m)-1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// declaredNames returns the exported functions and methods pkg declares.
func declaredNames(pkg *goPackage) map[string]bool {
	out := map[string]bool{}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.IsExported() {
				out[fd.Name.Name] = true
			}
		}
	}
	return out
}
