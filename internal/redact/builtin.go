package redact

//go:generate go test -tags redact_regen -run TestBuiltinTables -update-builtin .

// The automaton of the format rules alone is the same in every process,
// and it is what a redactor without secrets runs on: a guardian started
// with no secrets would otherwise build it on its way to the first record,
// 0.1 to 0.3 ms of allocation and page faults on a fresh heap. Its tables
// are generated from the rules into builtin_tables.go (go generate; the
// test that writes them fails while they are stale) as static data: read
// from the binary's pages, shared by every guardian through the page
// cache, never built at run time. A redactor with secrets builds its own
// automaton but shares the rule digram table, which needles leave alone.
// The generator builds with the tag redact_regen, which swaps the file for
// empty stand-ins (builtin_regen.go), so that a change that leaves it
// uncompilable can still be regenerated.

// noNeedleGrams and noNeedleCheck are the needle filters of an automaton
// without needles: all zero, in memory that is never written.
var (
	noNeedleGrams [needleWords]uint64
	noNeedleCheck [1 << minNeedleBits]uint8
)

// builtinAutomaton returns the automaton of the format rules alone, as
// buildAutomaton(rulePatterns(), authVariants(), authWindow, nil, nil) would.
// It shares its tables: like every automaton, it is never written once
// built.
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
		needleless:  true,
		back:        builtinBack,
	}
}
