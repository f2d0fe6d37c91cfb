package collections

// The verbs that one container has and another lacked, so that the same
// verb works on every container where it makes sense (docs/api.md).

// Has reports whether k is in the map: Get's second result, under Get's
// rules (concurrency, panics).
func (m *Map[K, V]) Has(k K) bool {
	_, ok := m.Get(k)
	return ok
}
