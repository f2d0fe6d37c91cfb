package collections

import "iter"

// The verbs that one container has and another lacked, so that the same
// verb works on every container where it makes sense (docs/api.md).

// Has reports whether k is in the map: Get's second result, under Get's
// rules (concurrency, panics).
func (m *Map[K, V]) Has(k K) bool {
	_, ok := m.Get(k)
	return ok
}

// Keys returns the keys in ascending order (All without the values).
func (t *BTree[K, V]) Keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range t.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// Values returns the values in the ascending order of their keys (All
// without the keys).
func (t *BTree[K, V]) Values() iter.Seq[V] {
	return func(yield func(V) bool) {
		for _, v := range t.All() {
			if !yield(v) {
				return
			}
		}
	}
}
