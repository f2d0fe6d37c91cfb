package collections

import (
	"fmt"
	"reflect"

	"github.com/govram/govram/internal/recs"
)

// mapCheckTypes checks that K and V can live in device memory (strings
// are stored specially) and reports which are strings.
func mapCheckTypes[K comparable, V any]() (strK, strV bool, err error) {
	kt, vt := reflect.TypeFor[K](), reflect.TypeFor[V]()
	strK, strV = isStringType(kt), isStringType(vt)
	if !strK {
		if err := recs.CheckType(kt); err != nil {
			return false, false, fmt.Errorf("collections: NewMap: key type: %w", err)
		}
	}
	if !strV {
		if err := recs.CheckType(vt); err != nil {
			return false, false, fmt.Errorf("collections: NewMap: value type: %w", err)
		}
	}
	return strK, strV, nil
}
