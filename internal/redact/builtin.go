package redact

//go:generate go test -run TestBuiltinTables -update-builtin .

// The automaton of the format rules alone is the same in every process,
// and it is what a redactor without secrets runs on: a guardian started
// with no secrets would otherwise build it on its way to the first record,
// 0.1 to 0.3 ms of allocation and page faults on a fresh heap. Its tables
// are generated from the rules into builtin_tables.go (go generate; the
// test that writes them fails while they are stale) as static data, which
// costs no work at run time and is shared by every guardian through the
// page cache.

// noNeedleGrams and noNeedleCheck are the needle filters of an automaton
// without needles: all zero, in memory that is never written.
var (
	noNeedleGrams [needleWords]uint64
	noNeedleCheck [1 << minNeedleBits]uint8
)

// builtinAutomaton returns the automaton of the format rules alone, as
// buildAutomaton(rulePatterns(), authVariants(), authWindow) would. It
// shares its tables: like every automaton, it is never written once built.
func builtinAutomaton() *automaton {
	return &automaton{
		states:      builtinStates[:],
		rows:        builtinRows[:],
		edgeByte:    builtinEdgeByte[:],
		edgeNext:    builtinEdgeNext[:],
		outs:        builtinOuts[:],
		filter:      &builtinFilter,
		short:       builtinShort,
		ruleGrams:   &builtinRuleGrams,
		needleGrams: &noNeedleGrams,
		needleCheck: noNeedleCheck[:],
		needleShift: 32 - minNeedleBits,
		back:        builtinBack,
	}
}
