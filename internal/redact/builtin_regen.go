//go:build redact_regen

package redact

// Empty stand-ins for the generated tables of builtin_tables.go, which the
// generator (go generate, with this tag) builds without: see builtin.go.

const builtinBack = 0

var (
	builtinShort     [maxShort]uint32
	builtinStates    []acState
	builtinRows      []int32
	builtinEdgeByte  []byte
	builtinEdgeNext  []int32
	builtinOuts      []acOut
	builtinFilter    [filterWords]uint64
	builtinRuleGrams [1 << 16]uint8
)
