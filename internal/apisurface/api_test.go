package apisurface

import (
	"flag"
	"fmt"
	"go/ast"
	"os"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/vmem"
)

var update = flag.Bool("update", false, "rewrite docs/api.md's generated sections from the method sets")

// Stand-ins for the type parameters, so that signatures read K, V and T.
type (
	K int
	V float64
	T int64
)

// container is one row of the table: its name, the package that declares
// it (where its Load functions are), and its pointer type.
type container struct {
	name, pkg string
	typ       reflect.Type
}

var containers = []container{
	{"Slice", "vmem", reflect.TypeFor[*vmem.Slice[T]]()},
	{"Map", "collections", reflect.TypeFor[*collections.Map[K, V]]()},
	{"BTree", "collections", reflect.TypeFor[*collections.BTree[K, V]]()},
	{"Ring", "collections", reflect.TypeFor[*collections.Ring[T]]()},
}

// verb is one column: the names of the methods (and, for Save/Load, of
// the package functions Load<Container> and Load<Container>Ordered) that
// do it on some container, in the order the table lists them.
type verb struct {
	name  string
	names []string
}

var verbs = []verb{
	{"Len", []string{"Len"}},
	{"Get", []string{"Get", "Peek"}},
	{"Has", []string{"Has"}},
	{"Put/Set", []string{"Put", "Set", "ReplaceOrInsert", "Append", "Push"}},
	{"Delete", []string{"Delete", "DeleteMin", "DeleteMax", "Pop"}},
	{"Clear", []string{"Clear"}},
	{"All", []string{"All", "Backward", "Chunks"}},
	{"Range", []string{"Range", "Ascend", "Descend"}},
	{"GetBatch/PutBatch", []string{"GetBatch", "PutBatch", "SetBatch", "BulkLoad", "PopBatch", "PushBatch"}},
	{"Stats", []string{"Stats"}},
	{"Save/Load", []string{"Save", "Load"}},
	{"Close", []string{"Close"}},
	{"Err", []string{"Err"}},
}

// decls holds what the table needs from a package's source: its
// top-level function names and its deprecated methods (Type.Method).
type decls struct {
	funcs      map[string]bool
	deprecated map[string]bool
}

func readDecls(t *testing.T, pkg string) decls {
	t.Helper()
	d := decls{map[string]bool{}, map[string]bool{}}
	for _, f := range parsePackage(t, path.Join(moduleRoot, pkg)).Files {
		for _, x := range f.Decls {
			fd, ok := x.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			if fd.Recv == nil {
				d.funcs[fd.Name.Name] = true
			} else if fd.Doc != nil && strings.Contains(fd.Doc.Text(), "Deprecated:") {
				d.deprecated[recvName(fd.Recv.List[0].Type)+"."+fd.Name.Name] = true
			}
		}
	}
	return d
}

// does returns the methods (and functions) with which c does v, with
// their signatures.
func does(c container, v verb, d decls) (names, sigs []string) {
	for _, n := range v.names {
		if n == "Load" {
			for _, fn := range []string{"Load" + c.name, "Load" + c.name + "Ordered"} {
				if d.funcs[fn] {
					names = append(names, c.pkg+"."+fn)
					sigs = append(sigs, c.pkg+"."+fn)
				}
			}
			continue
		}
		m, ok := c.typ.MethodByName(n)
		if !ok || d.deprecated[c.name+"."+n] {
			continue
		}
		names = append(names, n)
		sigs = append(sigs, n+signature(m.Type))
	}
	return names, sigs
}

// signature renders a method's type without its receiver.
func signature(ft reflect.Type) string {
	var in, out []string
	for i := 1; i < ft.NumIn(); i++ {
		s := typeName(ft.In(i))
		if ft.IsVariadic() && i == ft.NumIn()-1 {
			s = "..." + strings.TrimPrefix(s, "[]")
		}
		in = append(in, s)
	}
	for i := range ft.NumOut() {
		out = append(out, typeName(ft.Out(i)))
	}
	s := "(" + strings.Join(in, ", ") + ")"
	switch len(out) {
	case 0:
	case 1:
		s += " " + out[0]
	default:
		s += " (" + strings.Join(out, ", ") + ")"
	}
	return s
}

func typeName(t reflect.Type) string {
	s := t.String()
	s = strings.ReplaceAll(s, "github.com/govram/govram/internal/apisurface.", "")
	s = strings.ReplaceAll(s, "apisurface.", "")
	s = strings.ReplaceAll(s, "github.com/govram/govram/", "")
	return strings.ReplaceAll(s, ",", ", ")
}

// generate returns the table and the signatures section of docs/api.md.
func generate(t *testing.T) (table, sigs string) {
	d := map[string]decls{}
	for _, c := range containers {
		if _, ok := d[c.pkg]; !ok {
			d[c.pkg] = readDecls(t, c.pkg)
		}
	}
	var b, s strings.Builder
	b.WriteString("| |")
	for _, v := range verbs {
		fmt.Fprintf(&b, " %s |", v.name)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(verbs)) + "\n")
	for _, c := range containers {
		fmt.Fprintf(&b, "| `%s.%s` |", c.pkg, c.name)
		for _, v := range verbs {
			names, _ := does(c, v, d[c.pkg])
			if len(names) == 0 {
				b.WriteString(" — |")
				continue
			}
			fmt.Fprintf(&b, " `%s` |", strings.Join(names, "`, `"))
		}
		b.WriteString("\n")
	}
	for _, v := range verbs {
		fmt.Fprintf(&s, "\n### %s\n\n| container | signatures |\n| --- | --- |\n", v.name)
		for _, c := range containers {
			_, sg := does(c, v, d[c.pkg])
			if len(sg) > 0 {
				fmt.Fprintf(&s, "| `%s` | `%s` |\n", c.name, strings.Join(sg, "`, `"))
			}
		}
	}
	return b.String(), strings.TrimPrefix(s.String(), "\n")
}

// Markers around docs/api.md's generated sections.
const (
	tableBegin = "<!-- table: generated by `go test ./internal/apisurface -run TestAPITable -update`; edit the test, not this -->\n"
	tableEnd   = "<!-- end of table -->\n"
	sigsBegin  = "<!-- signatures: generated by `go test ./internal/apisurface -run TestAPITable -update` -->\n"
	sigsEnd    = "<!-- end of signatures -->\n"
)

// section returns doc's text between begin and end, and where it is.
func section(t *testing.T, doc, begin, end string) (text string, at, stop int) {
	t.Helper()
	at = strings.Index(doc, begin)
	stop = strings.Index(doc, end)
	if at < 0 || stop < at {
		t.Fatalf("docs/api.md has no section %q ... %q", begin, end)
	}
	at += len(begin)
	return doc[at:stop], at, stop
}

// TestAPITable: docs/api.md's table of containers and verbs, and its list
// of signatures, are what the containers' method sets say; with -update it
// rewrites them. Each verb's column lists every method that does it
// (deprecated ones left out), so a method added or removed shows here.
func TestAPITable(t *testing.T) {
	file := path.Join(moduleRoot, "docs", "api.md")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	table, sigs := generate(t)
	gotTable, ta, tb := section(t, doc, tableBegin, tableEnd)
	gotSigs, sa, sb := section(t, doc, sigsBegin, sigsEnd)
	if *update {
		if ta > sa {
			t.Fatal("docs/api.md: the table must come before the signatures")
		}
		doc = doc[:ta] + table + doc[tb:sa] + sigs + doc[sb:]
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if gotTable != table {
		t.Errorf("docs/api.md's table differs from the method sets (go test ./internal/apisurface -run TestAPITable -update rewrites it):\n%s", lineDiff(gotTable, table))
	}
	if gotSigs != sigs {
		t.Errorf("docs/api.md's signatures differ from the method sets (-update rewrites them):\n%s", lineDiff(gotSigs, sigs))
	}
}

// TestAPIVerbsKnown: every verb's names are methods of some container, so
// that a renamed method does not silently drop out of the table.
func TestAPIVerbsKnown(t *testing.T) {
	for _, v := range verbs {
		for _, n := range v.names {
			if n == "Load" {
				continue
			}
			if !slices.ContainsFunc(containers, func(c container) bool {
				_, ok := c.typ.MethodByName(n)
				return ok
			}) {
				t.Errorf("verb %s names %s, which no container has", v.name, n)
			}
		}
	}
}

// lineDiff lists the lines the document lacks and those it has that the
// method sets do not give.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&b, "missing: %s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&b, "stale:   %s\n", l)
		}
	}
	return b.String()
}
