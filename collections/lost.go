package collections

// Reads on a lost device.
//
// A read without an error result (Get, Has, Min, Max, Peek, Pop,
// iteration) cannot say that it failed, and "absent" would pass for an
// answer. Once the container's device is lost it panics instead, as Go
// does for a nil map write, with an error for which
// errors.Is(v, vmem.ErrDeviceLost) holds, naming the container and method
// ("collections: Map.Get: vmem: device lost"); Err keeps the loss too.
// The error-returning forms (GetBatch, PopBatch, DeleteMin, Save) return
// it instead. Only loss panics: other failures keep their documented
// behaviour, and a closed container panics as before.

// lostRead is the panic value of a read that met a lost device.
type lostRead struct {
	op  string // "Map.Get"
	err error  // matches vmem.ErrDeviceLost
}

func (e *lostRead) Error() string { return "collections: " + e.op + ": " + e.err.Error() }
func (e *lostRead) Unwrap() error { return e.err }

// readFault panics with err, a device loss met by the read op.
func readFault(op string, err error) {
	panic(&lostRead{op: op, err: err})
}

// recoverLost turns the panic of a read that met a lost device into *err,
// for methods with an error result that read through one without; other
// panics go on.
func recoverLost(err *error) {
	if r := recover(); r != nil {
		lr, ok := r.(*lostRead)
		if !ok {
			panic(r)
		}
		*err = lr.err
	}
}

// readLost ends Map read op if the device is lost: the tier is dropped
// (it must never answer after a loss), Err keeps the loss, and the read
// panics. Other device errors return.
//
//go:noinline
func (m *Map[K, V]) readLost(op string) {
	err := m.dev.Err()
	if !errIsDeviceLost(err) {
		return
	}
	if m.tier != nil {
		m.tier.invalidateAll()
	}
	m.setErr(err)
	readFault("Map."+op, err)
}

// readCheck is the loss check of the Map's reads: two plain loads.
func (m *Map[K, V]) readCheck(op string) {
	if m.dev.Err() != nil {
		m.readLost(op)
	}
}

// readLost is Map.readLost for a BTree (both tiers are dropped).
//
//go:noinline
func (t *BTree[K, V]) readLost(op string) {
	err := t.dev.Err()
	if !errIsDeviceLost(err) {
		return
	}
	t.tierLost(err)
	readFault("BTree."+op, err)
}

// readCheck is the loss check of the BTree's reads.
func (t *BTree[K, V]) readCheck(op string) {
	if t.dev.Err() != nil {
		t.readLost(op)
	}
}

// readCheck is the loss check of the Ring's reads: the loss is kept for
// Err, and the read panics.
func (r *Ring[T]) readCheck(op string) {
	if r.dev.Err() != nil {
		r.readLost(op)
	}
}

// readLost is Map.readLost for a Ring.
//
//go:noinline
func (r *Ring[T]) readLost(op string) {
	if err := r.dev.Err(); errIsDeviceLost(err) {
		r.c.err = err
		readFault("Ring."+op, err)
	}
}
