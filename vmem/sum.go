package vmem

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"reflect"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/hostmem"
)

// Sum returns the sum of the elements of a Slice.
//
// Integer sums are exact: they are accumulated in 128 bits, so they do not
// wrap at the element's width, and when the sum does not fit in T, Sum
// returns an error matching ErrRange (SumAs returns it in a wider type).
// Float sums are accumulated in float64 and rounded to T once, on the CPU
// with compensated (Neumaier) summation and on a GPU as a tree of float64
// partials, so the backends agree to within float64 rounding rather than
// float32's. A GPU without 64-bit float support sums floats on the CPU.
//
// On a pool, each device's part is summed on its device, all at once, and
// the partial sums added as above: the result is the sum of the same
// elements on one device (exactly, for integers).
func Sum[T Number](s *Slice[T]) (T, error) {
	return SumAs[T](s)
}

// SumAs returns the sum of the elements converted to R: SumAs[int64] sums
// a Slice[int8] of any length without overflow, SumAs[float64] a
// Slice[float32] without rounding the total to float32. The sum is
// computed as Sum computes it; an integer R that cannot hold it (or a NaN
// or infinite float sum) gives an error matching ErrRange, and a float sum
// is truncated toward zero for an integer R, as Go's conversion does.
func SumAs[R, T Number](s *Slice[T]) (R, error) {
	var zero R
	var acc sumAcc
	var err error
	if s.sh != nil {
		err = poolSum(s.sh, &acc)
	} else {
		err = sliceSum(s, &acc)
	}
	if err != nil {
		return zero, err
	}
	_, kind := kernNumInfo[T]()
	return sumTo[R](&acc, kind)
}

// sliceSum adds the Slice's elements to acc.
func sliceSum[T Number](s *Slice[T], acc *sumAcc) error {
	if err := s.usable(); err != nil {
		return err
	}
	if s.n == 0 {
		return nil
	}
	size, kind := kernNumInfo[T]()
	if k := s.dev.kern(); k != nil && (kind != kernFloat || k.f64) {
		err := kernSum(s, k, size, kind, acc)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errKernUnavailable) {
			return err
		}
		*acc = sumAcc{}
	}
	if s.dev.vk == nil {
		if err := s.dev.enter(); err != nil {
			return err
		}
		defer s.dev.exit()
		for i := range s.segs {
			first := i << s.shift
			if first >= s.n {
				break
			}
			sumRun(acc, unsafe.Slice((*T)(s.segs[i].Base), min(s.n-first, s.segs[i].cap)), size, kind)
		}
		return nil
	}
	for _, run := range s.Chunks() {
		sumRun(acc, run, size, kind)
	}
	return s.err.get()
}

// poolSum sums each part on its device, all at once, and adds the
// partial sums to acc.
func poolSum[T Number](s *poolSlice[T], acc *sumAcc) error {
	if err := s.usable(); err != nil {
		return err
	}
	accs := make([]sumAcc, s.nd)
	err := s.fan(s.spans(0, s.n), func(d int) error {
		return devErr("Sum", d, sliceSum(s.parts[d], &accs[d]))
	})
	if err != nil {
		return err
	}
	for i := range accs {
		acc.merge(&accs[i])
	}
	return nil
}

// sumAcc is an exact sum in progress: integers as a 128-bit two's
// complement number, floats as a float64 sum and its running compensation.
type sumAcc struct {
	lo, hi uint64
	f, c   float64
}

func (a *sumAcc) add128(lo, hi uint64) {
	var carry uint64
	a.lo, carry = bits.Add64(a.lo, lo, 0)
	a.hi += hi + carry
}

// merge adds the sum b to a: integers exactly, floats as one more
// compensated step plus b's compensation.
func (a *sumAcc) merge(b *sumAcc) {
	a.add128(b.lo, b.hi)
	a.addFloat(b.f)
	a.c += b.c
}

func (a *sumAcc) addInt(v int64) { a.add128(uint64(v), uint64(v>>63)) }

// addFloat is one step of Neumaier's summation: c gathers the low-order
// bits that each addition to f drops.
func (a *sumAcc) addFloat(v float64) {
	t := a.f + v
	if math.Abs(a.f) >= math.Abs(v) {
		a.c += (a.f - t) + v
	} else {
		a.c += (v - t) + a.f
	}
	a.f = t
}

// float is the float sum; an infinite or NaN one is f itself (the
// compensation is NaN once f overflowed).
func (a *sumAcc) float() float64 {
	if math.IsInf(a.f, 0) || math.IsNaN(a.f) {
		return a.f
	}
	return a.f + a.c
}

// int is the integer sum, read as signed or unsigned.
func (a *sumAcc) int(signed bool) *big.Int {
	b := new(big.Int).SetUint64(a.hi)
	b.Lsh(b, 64).Or(b, new(big.Int).SetUint64(a.lo))
	if signed && a.hi>>63 != 0 {
		b.Sub(b, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	return b
}

// sumRunBlock bounds the values of at most 32 bits added in an int64 or
// uint64 before it is flushed into the 128-bit sum: 2^30 of them cannot
// wrap it.
const sumRunBlock = 1 << 30

// sumRun adds vals to a.
func sumRun[T Number](a *sumAcc, vals []T, size, kind uint32) {
	switch {
	case kind == kernFloat:
		for _, v := range vals {
			a.addFloat(float64(v))
		}
	case size == 8 && kind == kernSigned:
		for _, v := range vals {
			a.addInt(int64(v))
		}
	case size == 8:
		for _, v := range vals {
			a.add128(uint64(v), 0)
		}
	case kind == kernSigned:
		for len(vals) > 0 {
			n := min(len(vals), sumRunBlock)
			var s int64
			for _, v := range vals[:n] {
				s += int64(v)
			}
			a.addInt(s)
			vals = vals[n:]
		}
	default:
		for len(vals) > 0 {
			n := min(len(vals), sumRunBlock)
			var s uint64
			for _, v := range vals[:n] {
				s += uint64(v)
			}
			a.add128(s, 0)
			vals = vals[n:]
		}
	}
}

// sumTo converts the sum of values of the given kind to R.
func sumTo[R Number](a *sumAcc, kind uint32) (R, error) {
	var zero R
	rsize, rkind := kernNumInfo[R]()
	if rkind == kernFloat {
		var x float64
		if kind == kernFloat {
			x = a.float()
		} else {
			x, _ = new(big.Float).SetInt(a.int(kind == kernSigned)).Float64()
		}
		if rsize == 4 && math.Abs(x) > math.MaxFloat32 && !math.IsInf(x, 0) {
			// Go leaves an out-of-range float conversion to the
			// implementation; float32 arithmetic would give an infinity.
			x = math.Copysign(math.Inf(1), x)
		}
		return R(x), nil
	}
	var b *big.Int
	if kind == kernFloat {
		x := a.float()
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return zero, fmt.Errorf("vmem: Sum: %v is not a %v: %w", x, reflect.TypeFor[R](), ErrRange)
		}
		b, _ = big.NewFloat(x).Int(nil)
	} else {
		b = a.int(kind == kernSigned)
	}
	n := uint(rsize * 8)
	lo, hi := new(big.Int), new(big.Int).Lsh(big.NewInt(1), n)
	if rkind == kernSigned {
		hi.Rsh(hi, 1)
		lo.Neg(hi)
	}
	hi.Sub(hi, big.NewInt(1))
	if b.Cmp(lo) < 0 || b.Cmp(hi) > 0 {
		return zero, fmt.Errorf("vmem: Sum: %v does not fit in %v: %w", b, reflect.TypeFor[R](), ErrRange)
	}
	if rkind == kernSigned {
		return R(b.Int64()), nil
	}
	return R(b.Uint64()), nil
}

// kernSumGroups bounds the partial sums of one segment.
const kernSumGroups = 256

// kernSum adds the Slice's elements to a with the reduce kernels: one
// dispatch per segment writes its workgroups' partials to host memory, and
// the CPU adds them (at most kernSumGroups a segment).
func kernSum[T Number](s *Slice[T], k *kernState, size, kind uint32, a *sumAcc) error {
	kn, rk, slotBytes := kernReduce, uint32(bits.TrailingZeros32(size)), uint64(16)
	switch {
	case kind == kernFloat:
		kn, rk, slotBytes = kernReduceF64, 2, 8
		if size == 8 {
			rk = 3
		}
	case kind == kernSigned:
		rk |= 16
	}
	type span struct {
		blk   block.Block
		n     uint64
		slots uint32
	}
	var spans []span
	slots := uint32(0)
	for i := range s.segs {
		first := i << s.shift
		if first >= s.n {
			break
		}
		n := uint64(min(s.n-first, s.segs[i].cap))
		gr := uint32(min((n+kernWG*16-1)/(kernWG*16), kernSumGroups))
		spans = append(spans, span{s.segs[i].blk, n, gr})
		slots += gr
	}
	if err := s.dev.enter(); err != nil {
		return err
	}
	defer s.dev.exit()
	host, err := s.dev.kernTakeScratch(kernScratchHost, uint64(slots)*slotBytes)
	if err != nil {
		return err
	}
	defer s.dev.kernPutScratch(kernScratchHost, host)
	b := s.dev.newKernBatch(k)
	at := uint32(0)
	for _, sn := range spans {
		p := kernReducePush{src: kaddr(sn.blk, 0), dst: host.Addr, n: uint32(sn.n), kind: rk, slot: at}
		b.dispatch(kn, sn.slots, bytesOf(&p))
		at += sn.slots
	}
	if err := s.dev.kernRunHeld(b); err != nil {
		return err
	}
	for i := range uint64(slots) {
		w := hostmem.Add(host.Ptr, i*slotBytes)
		if kind == kernFloat {
			a.addFloat(math.Float64frombits(*(*uint64)(w)))
		} else {
			a.add128(*(*uint64)(w), *(*uint64)(hostmem.Add(w, 8)))
		}
	}
	return nil
}
