package collections

import (
	"reflect"
	"testing"
)

type myString string

func TestIsStringType(t *testing.T) {
	if !isStringType(reflect.TypeFor[string]()) || !isStringType(reflect.TypeFor[myString]()) {
		t.Fatal("string types not recognised")
	}
	if isStringType(reflect.TypeFor[[]byte]()) || isStringType(nil) {
		t.Fatal("non-string recognised as string")
	}
}
