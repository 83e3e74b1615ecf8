package drills

// This file declares every pipeline fault kind (faults[].kind), once: its
// name, a one-line doc and how the dispatcher goes down. Validation, the
// key reference and every runner read these declarations. To add a kind,
// add a declaration here and a case to its test.

// FaultKind declares one kind of fault of the pipeline itself.
type FaultKind struct {
	Name string // as written in faults[].kind
	Doc  string // one line: what happens
	// Graceful: the dispatcher finishes the attempts in flight before it
	// stops; otherwise they are lost and their deliveries come back when
	// their leases expire.
	Graceful bool
}

// FaultKinds declares every pipeline fault kind.
var FaultKinds = []FaultKind{
	{Name: "restart", Doc: "kill the dispatcher; the attempts in flight are lost"},
	{Name: "graceful-restart", Doc: "stop the dispatcher once its attempts in flight end", Graceful: true},
}

// FaultKindNames lists the fault kinds' names in declaration order.
func FaultKindNames() []string {
	names := make([]string, len(FaultKinds))
	for i := range FaultKinds {
		names[i] = FaultKinds[i].Name
	}
	return names
}

// faultKind returns the declaration named name; an unknown name (refused
// by validation) gets a zero one.
func faultKind(name string) *FaultKind {
	for i := range FaultKinds {
		if FaultKinds[i].Name == name {
			return &FaultKinds[i]
		}
	}
	return &FaultKind{}
}

// Graceful reports whether the fault lets the attempts in flight finish
// (FaultKind.Graceful).
func (f *Fault) Graceful() bool { return faultKind(f.Kind).Graceful }
