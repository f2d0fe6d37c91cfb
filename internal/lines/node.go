package lines

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"
)

// Field is one array inside a node: Count elements of Size bytes aligned to
// Align (0 means 1). A scalar is an array of one.
type Field struct {
	Name  string
	Size  uintptr
	Align uintptr
	Count int
}

// FieldOf describes an array of count values of type T.
func FieldOf[T any](name string, count int) Field {
	var zero T
	return Field{Name: name, Size: unsafe.Sizeof(zero), Align: unsafe.Alignof(zero), Count: count}
}

// Placement is where NodeLayout put one field.
type Placement struct {
	Name      string
	Offset    uintptr // from the start of the node
	Bytes     uintptr // Size*Count
	FirstLine int     // the line holding the field's first byte
	Lines     int     // lines the field touches (0 for an empty field)
}

// NodeLayout is a structure-of-arrays node (a B+tree leaf, a hash bucket)
// packed into whole lines. Fields are in the order given to NewNodeLayout.
type NodeLayout struct {
	Fields []Placement
	Lines  int     // lines the node occupies
	Size   uintptr // Lines*64: the node's stride
}

// NewNodeLayout places the fields of a node in the fewest lines such that
// every field touches the fewest lines it can: reading one whole field (all
// keys, all values) costs the minimum number of streaming loads, and the node
// as a whole costs the minimum it can in VRAM and in transfers.
//
// The rules, and the line each one saves:
//
//   - A field of 64 bytes or more starts on a line boundary and takes
//     ceil(bytes/64) lines. Placed anywhere else it would touch one line
//     more on every full read (120 bytes of keys at offset 8 touch three
//     lines, at offset 0 two).
//   - A field under 64 bytes never straddles a line: it is read with one
//     load, never two.
//   - Fields under 64 bytes fill, largest first, the space left in the last
//     line of the large fields and then in new lines (first fit
//     decreasing). Every small field that fits in such a gap saves the
//     whole line it would otherwise start.
//
// It returns an error for a negative count or an impossible alignment.
func NewNodeLayout(fields ...Field) (NodeLayout, error) {
	nl := NodeLayout{Fields: make([]Placement, len(fields))}
	type bin struct {
		line int
		used uintptr // bytes used from the start of the line
	}
	var bins []bin
	var small []int
	line := 0 // next free line after the large fields
	for i, f := range fields {
		if f.Count < 0 {
			return NodeLayout{}, fmt.Errorf("lines: field %q: negative count %d", f.Name, f.Count)
		}
		align := f.Align
		if align == 0 {
			align = 1
		}
		if align&(align-1) != 0 {
			return NodeLayout{}, fmt.Errorf("lines: field %q: alignment %d is not a power of two", f.Name, f.Align)
		}
		hi, n := bits.Mul64(uint64(f.Size), uint64(f.Count))
		if hi != 0 || n > 1<<40 {
			return NodeLayout{}, errors.New("layout: field " + f.Name + " is too large for a node")
		}
		p := &nl.Fields[i]
		p.Name, p.Bytes = f.Name, uintptr(n)
		switch {
		case n == 0:
			// Takes no space; offset 0, no lines.
		case n < LineSize && align <= LineSize:
			small = append(small, i)
		default:
			// Large field: line-aligned (or more, if its alignment asks).
			if align > LineSize {
				line = int(roundUp(uintptr(line)*LineSize, align) / LineSize)
			}
			p.Offset = uintptr(line) * LineSize
			p.FirstLine = line
			p.Lines = int((n + LineSize - 1) / LineSize)
			line += p.Lines
			if rem := uintptr(n % LineSize); rem != 0 {
				bins = append(bins, bin{line: line - 1, used: rem})
			}
		}
	}
	// First fit decreasing; ties keep the caller's order so the result is
	// deterministic.
	slices.SortStableFunc(small, func(a, b int) int {
		return int(nl.Fields[b].Bytes) - int(nl.Fields[a].Bytes)
	})
	for _, i := range small {
		f, p := fields[i], &nl.Fields[i]
		align := max(f.Align, 1)
		placed := false
		for j := range bins {
			off := roundUp(bins[j].used, align)
			if off+p.Bytes <= LineSize {
				p.Offset = uintptr(bins[j].line)*LineSize + off
				bins[j].used = off + p.Bytes
				placed = true
				break
			}
		}
		if !placed {
			bins = append(bins, bin{line: line, used: p.Bytes})
			p.Offset = uintptr(line) * LineSize
			line++
		}
		p.FirstLine = int(p.Offset / LineSize)
		p.Lines = 1
	}
	nl.Lines = line
	nl.Size = uintptr(line) * LineSize
	return nl, nil
}

// Field returns the placement of the named field and whether there is one.
func (nl NodeLayout) Field(name string) (Placement, bool) {
	for _, p := range nl.Fields {
		if p.Name == name {
			return p, true
		}
	}
	return Placement{}, false
}

func roundUp(x, a uintptr) uintptr { return (x + a - 1) &^ (a - 1) }
