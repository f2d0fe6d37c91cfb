package lines

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkNode verifies the promises of NewNodeLayout for one field set.
func checkNode(t *testing.T, fields []Field, nl NodeLayout) {
	t.Helper()
	var total uintptr
	for i, f := range fields {
		p := nl.Fields[i]
		align := max(f.Align, 1)
		n := f.Size * uintptr(f.Count)
		total += n
		if p.Bytes != n || p.Name != f.Name {
			t.Fatalf("field %d: %+v for %+v", i, p, f)
		}
		if n == 0 {
			continue
		}
		if p.Offset%align != 0 || p.Offset+n > nl.Size {
			t.Fatalf("field %q at %d (+%d) misaligned or outside %d", f.Name, p.Offset, n, nl.Size)
		}
		touched := int((p.Offset+n-1)/LineSize - p.Offset/LineSize + 1)
		if minimum := int((n + LineSize - 1) / LineSize); touched != minimum || p.Lines != minimum {
			t.Fatalf("field %q (%d bytes at %d) touches %d lines, reports %d, minimum %d", f.Name, n, p.Offset, touched, p.Lines, minimum)
		}
		if p.FirstLine != int(p.Offset/LineSize) {
			t.Fatalf("field %q: FirstLine %d, offset %d", f.Name, p.FirstLine, p.Offset)
		}
		for j := range i {
			q, m := nl.Fields[j], fields[j].Size*uintptr(fields[j].Count)
			if m > 0 && p.Offset < q.Offset+m && q.Offset < p.Offset+n {
				t.Fatalf("fields %q and %q overlap", f.Name, fields[j].Name)
			}
		}
	}
	if nl.Lines < int((total+LineSize-1)/LineSize) || nl.Size != uintptr(nl.Lines)*LineSize {
		t.Fatalf("%d lines for %d bytes", nl.Lines, total)
	}
}

func TestNodeLayoutRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		fields := make([]Field, 1+r.IntN(6))
		for i := range fields {
			size := uintptr(1) << r.IntN(4)
			fields[i] = Field{Name: fmt.Sprint("f", i), Size: size, Align: size, Count: r.IntN(40)}
		}
		nl, err := NewNodeLayout(fields...)
		if err != nil {
			t.Fatal(err)
		}
		checkNode(t, fields, nl)
	}
}

func TestNodeLayoutPacksSmallFieldsIntoGaps(t *testing.T) {
	// keys take 120 bytes: two lines with 8 bytes spare, where the count
	// goes; the values (60 bytes) take a line of their own.
	fields := []Field{
		FieldOf[uint16]("count", 1),
		FieldOf[uint64]("keys", 15),
		FieldOf[uint32]("vals", 15),
	}
	nl, err := NewNodeLayout(fields...)
	if err != nil {
		t.Fatal(err)
	}
	checkNode(t, fields, nl)
	if c, _ := nl.Field("count"); c.Offset != 120 || nl.Lines != 3 {
		t.Fatalf("count at %d, %d lines", c.Offset, nl.Lines)
	}
	// Four 16-byte arrays share one line rather than taking four.
	var small []Field
	for i := range 4 {
		small = append(small, FieldOf[[2]uint64](fmt.Sprint("s", i), 1))
	}
	if nl, _ := NewNodeLayout(small...); nl.Lines != 1 {
		t.Fatalf("four 16-byte fields in %d lines", nl.Lines)
	}
}

func TestNodeLayoutErrors(t *testing.T) {
	if _, err := NewNodeLayout(Field{Name: "x", Size: 8, Count: -1}); err == nil {
		t.Fatal("negative count accepted")
	}
	if _, err := NewNodeLayout(Field{Name: "x", Size: 8, Align: 3, Count: 1}); err == nil {
		t.Fatal("alignment 3 accepted")
	}
	if _, err := NewNodeLayout(Field{Name: "x", Size: 1 << 30, Count: 1 << 30}); err == nil {
		t.Fatal("huge field accepted")
	}
	if _, ok := (NodeLayout{}).Field("nope"); ok {
		t.Fatal("found a field in an empty layout")
	}
}

func ExampleNewNodeLayout() {
	// A B+tree leaf: 15 keys, 15 values, a count and a next-leaf index.
	nl, err := NewNodeLayout(
		FieldOf[uint64]("keys", 15),
		FieldOf[uint32]("vals", 15),
		FieldOf[uint16]("count", 1),
		FieldOf[uint32]("next", 1),
	)
	if err != nil {
		panic(err)
	}
	for _, p := range nl.Fields {
		fmt.Printf("%-5s offset %3d, %3d bytes, lines %d..%d\n", p.Name, p.Offset, p.Bytes, p.FirstLine, p.FirstLine+p.Lines-1)
	}
	fmt.Println("node:", nl.Lines, "lines")
	// Output:
	// keys  offset   0, 120 bytes, lines 0..1
	// vals  offset 128,  60 bytes, lines 2..2
	// count offset 124,   2 bytes, lines 1..1
	// next  offset 120,   4 bytes, lines 1..1
	// node: 3 lines
}
