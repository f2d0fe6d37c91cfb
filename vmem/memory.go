package vmem

// Memory is where a container is made: one *Device, or a *Pool whose
// devices the container spreads over. Every constructor and loader takes a
// Memory, so moving a program from one GPU to all of them is a change of
// the value passed (vmem.Open's device for vmem.OpenAll's pool), not of the
// container's type or methods. Only *Device and *Pool implement it.
type Memory interface {
	// memory seals the interface: containers know how to live on these
	// two and no others.
	memory()
}

func (*Device) memory() {}
func (*Pool) memory()   {}

// Compile-time checks that both implement Memory.
var (
	_ Memory = (*Device)(nil)
	_ Memory = (*Pool)(nil)
)
