package redact

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"
)

// The literal matcher is one Aho-Corasick automaton over every needle of
// every secret and every rule trigger, so each byte is looked at once however
// many secrets are registered. States with many children get a full
// 256-entry transition row; the rest keep a short edge list and fall back
// along failure links, which keeps the tables small (a deep state of a random
// secret has one child) while the total work stays linear: each failure hop
// shortens the match, and a byte lengthens it by at most one.

// The stream skips text in which nothing can start using three filters.
//
// The prefix filter holds the first four bytes of every pattern, and the
// two three-byte rule triggers ("eyJ" and "://") exactly: a position whose
// 4-gram misses it and whose 3-gram is neither trigger starts nothing. It
// decides single positions. Four bytes rather than three, and two bits per
// 4-gram hashed independently of the needle filter, keep a gram common in
// logs from passing it (the "amp" of "example" began a base64 form of one
// secret): one that passed would stop the skip at every occurrence.
//
// The stride filters let the skip loop test only some positions. A pattern
// of length at least s+g-1 has, among any s consecutive start offsets, one
// whose g-gram lies inside it; so testing the g-grams at every s-th position
// against a filter holding each pattern's g-grams at s consecutive offsets
// (its window) finds every pattern. Rule patterns are short (three bytes
// for "eyJ" and "://") and use digrams at stride 2, with the window placed
// on digrams that are rare in logs; needles are at least MinSecretLen long
// and use 3-grams at stride 6.
//
// A stride hit names the starts it may belong to: a needle 3-gram one of the
// six before it, a rule digram those at the offsets its table entry lists.
// Only these are tested against the prefix filter, so that a digram common
// in logs (the "xa" of "example" is in the window of "xoxa-") costs one test
// rather than one per position of the round.
const (
	// The prefix filter: 32 KiB. With 200 secrets and their spellings
	// it is 8% full (15% at 16 KiB), so a gram passes it by chance once
	// in about 165 rather than once in 43. At 16 KiB " \u0" did, before
	// each escaped secret of the adversarial bench: its backslash cases
	// ran 9% more instructions, at 9 to 19% lower rates.
	filterBits  = 18
	filterWords = 1 << filterBits / 64

	// The needle stride filter has about 64 bits per 3-gram, for a false
	// hit rate near 1.5%, within these bounds (128 bytes to 32 KiB): a
	// table no larger than needed stays in L1. A hit is checked against a
	// second table with as many entries, hashed independently, which
	// leaves about one false hit in 4000 rounds; its entries list the
	// offsets at which the 3-gram lies in needles, so that a 3-gram common
	// in logs that one needle happens to hold costs one test of a start
	// rather than six.
	minNeedleBits = 10
	maxNeedleBits = 18
	needleWords   = 1 << maxNeedleBits / 64

	ruleStride   = 2
	needleStride = 6
)

// denseMin is the child count from which a state gets a full row.
const denseMin = 6

// trigger reports that a rule's literal trigger of the given length ends at
// the current byte.
type trigger struct {
	rule   uint8
	length uint8
}

// pattern is one literal fed to the automaton. A holding pattern's prefix is
// held back while it may complete; the URL trigger is not holding because
// the text it matches is never redacted. A rule pattern's stride window
// starts at offset window.
type pattern struct {
	text    string
	needle  bool
	holding bool
	trig    trigger
	window  int
	// esc marks a needle the escape lanes report, pct one only the
	// percent lanes report, space one the whitespace lane reports
	// (lane.go).
	esc, pct, space bool
}

// acState is one automaton state. The states of long needles are mostly
// chains with one child each, so a state keeps to 16 bytes and what few
// states have beyond that (outputs, full rows) lives in side tables.
type acState struct {
	fail  int32
	next  int32 // first edge in edgeByte/edgeNext, or the full row's index
	depth int32 // length of the text the state stands for
	// info holds the edge count in its low byte (denseEdges for a full
	// row), flagHolding, and from bit outShift the index+1 of the state's
	// entry in automaton.outs (0: nothing ends here).
	info uint32
}

const (
	denseEdges       = 0xff
	flagHolding      = 1 << 8  // the state's text is a prefix of a holding pattern
	flagEscHolding   = 1 << 9  // of a needle of the escape lanes
	flagSpaceHolding = 1 << 10 // of a needle of the whitespace lane
	flagPctHolding   = 1 << 11 // of a needle of the percent lanes only
	// Every needle is marked for a lane kind (needlePatterns), so these
	// are the prefixes of the needles.
	flagNeedleHolding = flagEscHolding | flagSpaceHolding | flagPctHolding
	outShift          = 12
)

// acOut is what ends at a state: the longest needle, the longest of those
// the escape lanes, the percent lanes alone and the whitespace lane
// report, and the triggers.
type acOut struct {
	match int32
	trigs []trigger
	esc   int32
	pct   int32
	space int32
}

type automaton struct {
	states   []acState
	rows     []int32
	edgeByte []byte
	edgeNext []int32
	outs     []acOut
	// filter has two bits set for the first four bytes of every pattern
	// (and of every case variant of "auth"), and short holds the patterns
	// of three bytes: a position whose 4-gram misses filter and whose
	// 3-gram is not in short cannot start anything, which is what lets the
	// stream skip.
	filter *[filterWords]uint64
	short  [maxShort]uint32 // unused entries are noShort

	// ruleGrams has, for each digram of a rule window, bit k set when the
	// digram lies at offset k of a pattern (k < 8: see maxRuleOffset).
	ruleGrams *[1 << 16]uint8
	// needleGrams holds the 3-grams of needles at offsets 0 to 5 in its
	// first 2^(32-needleShift) bits; it has the largest size so that the
	// skip loop indexes it without a bounds check. needleCheck has the
	// same number of entries under the second hash, each with bit o set
	// when a 3-gram at offset o of a needle lands there.
	needleGrams *[needleWords]uint64
	needleCheck []uint8
	needleShift uint32 // 32 minus the filter's bit count
	needleless  bool   // no needle: needleGrams is empty
	// back is how far before a stride hit a pattern holding the hit gram
	// may start.
	back int
	// straight has, for each state, how many bytes (up to 255) lead from
	// it straight down the trie: each step from a state with one edge to
	// the state numbered one more, on a byte that detaches no lane, to a
	// state where nothing ends. Those bytes are consecutive in edgeByte
	// from the state's first edge, so follow compares them with the text
	// eight at a time. Nil without needles.
	straight []uint8
}

// maxRuleOffset is the largest offset of a rule window's digram that
// automaton.ruleGrams can record. automaton.settle relies on it being below
// needleStride+3.
const maxRuleOffset = 7

var _ [needleStride + 3 - 1 - maxRuleOffset]struct{} // maxRuleOffset < needleStride+3

// addRuleWindow adds the digrams of text at offsets w and w+1, unless the
// table holds them already (record false: see buildAutomaton).
func (a *automaton) addRuleWindow(text string, w int, record bool) {
	if w+ruleStride-1 > maxRuleOffset {
		panic("redact: rule window past maxRuleOffset")
	}
	if record {
		for o := w; o < w+ruleStride; o++ {
			a.ruleGrams[uint16(text[o])|uint16(text[o+1])<<8] |= 1 << o
		}
	}
	a.back = max(a.back, w+ruleStride-1)
}

func (a *automaton) addNeedleGrams(text string) {
	for o := 0; o < needleStride; o++ {
		a.addStrideGram(gramKey(text[o], text[o+1], text[o+2]), o)
	}
}

// addStrideGram adds the 3-gram k at offset o of a needle to the stride
// filter.
func (a *automaton) addStrideGram(k uint32, o int) {
	h := needleHash(k, a.needleShift)
	a.needleGrams[h>>6] |= 1 << (h & 63)
	a.needleCheck[needleHash2(k, a.needleShift)] |= 1 << o
	a.back = max(a.back, needleStride-1)
}

// needleHash returns the bit of a 3-gram in automaton.needleGrams.
func needleHash(k, shift uint32) uint32 {
	return k * 0x9E3779B1 >> shift
}

// needleHash2 returns the entry of a 3-gram in automaton.needleCheck.
func needleHash2(k, shift uint32) uint32 {
	return uint32(uint64(k) * 0x165667B19E3779F9 >> (32 + shift))
}

// maxShort is how many patterns of three bytes the prefix filter can hold;
// noShort marks an unused entry (3-grams are below 2^24).
const (
	maxShort = 2
	noShort  = ^uint32(0)
)

// gramHash returns the two bits of a 4-gram in the prefix filter.
func gramHash(k uint32) (uint32, uint32) {
	h := uint64(k) * 0xC2B2AE3D27D4EB4F
	return uint32(h >> (64 - filterBits)), uint32(h>>(64-2*filterBits)) & (1<<filterBits - 1)
}

func gramKey(b0, b1, b2 byte) uint32 {
	return uint32(b0) | uint32(b1)<<8 | uint32(b2)<<16
}

// addGram adds the beginning of a pattern to the prefix filter.
func (a *automaton) addGram(g string) {
	if len(g) < 4 {
		k := gramKey(g[0], g[1], g[2])
		if !slices.Contains(a.short[:], k) {
			i := slices.Index(a.short[:], noShort)
			if i < 0 {
				panic("redact: more than maxShort patterns of three bytes")
			}
			a.short[i] = k
		}
		return
	}
	a.addGramKey(binary.LittleEndian.Uint32([]byte(g)))
}

// addGramKey adds the 4-gram k to the prefix filter.
func (a *automaton) addGramKey(k uint32) {
	h1, h2 := gramHash(k)
	a.filter[h1>>6] |= 1 << (h1 & 63)
	a.filter[h2>>6] |= 1 << (h2 & 63)
}

// hit reports whether something may start where the 4-gram k begins.
//
// It takes the gram rather than the text, and tests both bits and the
// short patterns without a branch between them, so that the compiler
// inlines it: the skip calls it for each start a stride hit names, and
// the scan for each byte it reads. The calls cost the adversarial bench's
// escaped cases 3 to 4% of their instructions; with follow and along
// inlined too, those cases ran 5 to 7% faster.
func (a *automaton) hit(k uint32) bool {
	h1, h2 := gramHash(k)
	k3 := k & 0xffffff
	return a.filter[h1>>6]>>(h1&63)&(a.filter[h2>>6]>>(h2&63))&1 != 0 || k3 == a.short[0] || k3 == a.short[1]
}

type trieEdge struct {
	b  byte
	to int32
}

type trieNode struct {
	edges        []trieEdge
	depth        int32
	holding      bool
	escHolding   bool
	pctHolding   bool
	spaceHolding bool
	match        int32
	esc, pct     int32
	space        int32
	trigs        []trigger
}

// trieSize returns the number of nodes of the patterns' trie, so that
// it is made that large at once and never copied as it grows: one for
// each distinct prefix of a pattern, the empty one (the root)
// included. In sorted order, each pattern adds the prefixes it does not
// share with the one before it. (One node per byte of the patterns
// would be up to eight times too many for a long secret whose forms
// differ only near its end.)
func trieSize(pats []pattern) int {
	texts := make([]string, len(pats))
	for i, p := range pats {
		texts[i] = p.text
	}
	slices.Sort(texts)
	n := 1
	prev := ""
	for _, t := range texts {
		shared := 0
		for shared < len(prev) && shared < len(t) && prev[shared] == t[shared] {
			shared++
		}
		n += len(t) - shared
		prev = t
	}
	return n
}

// buildAutomaton compiles the patterns. words are the case variants of a
// word matched outside the automaton (the Authorization header name), whose
// beginnings must stop the skip too; their window starts at wordWindow.
// ruleGrams, when not nil, is the rule digram table these rule patterns and
// words make, which the automaton shares instead of building its own (64
// KiB): needles add nothing to it.
func buildAutomaton(pats []pattern, words []string, wordWindow int, ruleGrams *[1 << 16]uint8, lanes []laneSpec) (*automaton, error) {
	nodes := make([]trieNode, 1, trieSize(pats))
	child := func(u int32, b byte) int32 {
		for _, e := range nodes[u].edges {
			if e.b == b {
				return e.to
			}
		}
		return -1
	}
	a := &automaton{
		filter:    new([filterWords]uint64),
		short:     [maxShort]uint32{noShort, noShort},
		ruleGrams: ruleGrams,
	}
	record := ruleGrams == nil
	if record {
		a.ruleGrams = new([1 << 16]uint8)
	}
	spelled := spelledGrams(pats, lanes)
	// (A 3-gram spelled by several needles counts for each: the filter
	// is sized for at most this many.)
	needles := len(spelled.strides) / needleStride
	for _, p := range pats {
		if p.needle {
			needles++
		}
	}
	nbits := minNeedleBits
	for nbits < maxNeedleBits && 1<<nbits < 64*needleStride*needles {
		nbits++
	}
	a.needleGrams = new([needleWords]uint64)
	a.needleCheck = make([]uint8, 1<<nbits)
	a.needleShift = uint32(32 - nbits)
	a.needleless = needles == 0
	for _, p := range pats {
		// Every pattern is at least three bytes long, which the filter needs,
		// and every needle at least needleStride+2.
		a.addGram(p.text)
		if p.needle {
			a.addNeedleGrams(p.text)
		} else {
			a.addRuleWindow(p.text, p.window, record)
		}
		u := int32(0)
		for i := 0; i < len(p.text); i++ {
			v := child(u, p.text[i])
			if v < 0 {
				v = int32(len(nodes))
				nodes = append(nodes, trieNode{depth: int32(i + 1)})
				nodes[u].edges = append(nodes[u].edges, trieEdge{p.text[i], v})
			}
			if p.holding {
				nodes[v].holding = true
			}
			nodes[v].escHolding = nodes[v].escHolding || p.esc
			nodes[v].pctHolding = nodes[v].pctHolding || p.pct
			nodes[v].spaceHolding = nodes[v].spaceHolding || p.space
			u = v
		}
		if p.needle {
			n := &nodes[u]
			n.match = max(n.match, int32(len(p.text)))
			if p.esc {
				n.esc = max(n.esc, int32(len(p.text)))
			}
			if p.pct {
				n.pct = max(n.pct, int32(len(p.text)))
			}
			if p.space {
				n.space = max(n.space, int32(len(p.text)))
			}
		} else {
			nodes[u].trigs = append(nodes[u].trigs, p.trig)
		}
	}
	for _, v := range words {
		a.addGram(v)
		a.addRuleWindow(v, wordWindow, record)
	}
	for _, k := range spelled.prefixes {
		a.addGramKey(k)
	}
	for _, g := range spelled.strides {
		a.addStrideGram(g&0xffffff, int(g>>24))
	}

	// Breadth-first order puts every state after its failure target, so the
	// values inherited along failure links are final when they are read.
	fail := make([]int32, len(nodes))
	order := make([]int32, 1, len(nodes))
	for qi := 0; qi < len(order); qi++ {
		u := order[qi]
		for _, e := range nodes[u].edges {
			if u != 0 {
				f := fail[u]
				for {
					if w := child(f, e.b); w >= 0 {
						fail[e.to] = w
						break
					}
					if f == 0 {
						break
					}
					f = fail[f]
				}
			}
			order = append(order, e.to)
		}
	}

	a.states = make([]acState, len(nodes))
	outIndex := make([]int, len(nodes)) // index+1 into a.outs
	for _, u := range order {
		n := &nodes[u]
		st := &a.states[u]
		st.fail = fail[u]
		st.depth = n.depth
		if n.holding {
			st.info |= flagHolding
		}
		if n.escHolding {
			st.info |= flagEscHolding
		}
		if n.spaceHolding {
			st.info |= flagSpaceHolding
		}
		if n.pctHolding {
			st.info |= flagPctHolding
		}
		out := acOut{match: n.match, trigs: n.trigs, esc: n.esc, pct: n.pct, space: n.space}
		if k := outIndex[fail[u]]; u != 0 && k > 0 {
			// Own triggers come first: they are the longest, so when a rule
			// has two ending here the earlier start wins.
			inherited := a.outs[k-1]
			out.match = max(out.match, inherited.match)
			out.esc = max(out.esc, inherited.esc)
			out.pct = max(out.pct, inherited.pct)
			out.space = max(out.space, inherited.space)
			out.trigs = append(append([]trigger(nil), n.trigs...), inherited.trigs...)
		}
		if out.match > 0 || len(out.trigs) > 0 {
			if len(a.outs)+1 >= 1<<(32-outShift) {
				return nil, errors.New("redact: too many needles")
			}
			a.outs = append(a.outs, out)
			outIndex[u] = len(a.outs)
			st.info |= uint32(len(a.outs)) << outShift
		}
	}
	// Edges go in state order, not breadth-first: the states of a needle's
	// tail are consecutive, and so are their edges, which a scan following
	// a long needle then reads in sequence rather than one cache line per
	// byte.
	for u := range nodes {
		st := &a.states[u]
		st.next = int32(len(a.edgeByte))
		st.info |= uint32(len(nodes[u].edges))
		for _, e := range nodes[u].edges {
			a.edgeByte = append(a.edgeByte, e.b)
			a.edgeNext = append(a.edgeNext, e.to)
		}
	}
	if needles > 0 {
		a.straight = straightPaths(nodes, a.states, lanes)
	}
	for _, u := range order {
		if u != 0 && len(nodes[u].edges) < denseMin {
			continue
		}
		row := make([]int32, 256)
		for c := 0; c < 256; c++ {
			if v := child(u, byte(c)); v >= 0 {
				row[c] = v
			} else if u != 0 {
				row[c] = a.next(fail[u], byte(c))
			}
		}
		st := &a.states[u]
		st.next = int32(len(a.rows) / 256)
		st.info = st.info&^0xff | denseEdges
		a.rows = append(a.rows, row...)
	}
	return a, nil
}

// straightPaths returns automaton.straight for a trie whose states have
// their outputs set. A needle's tail below the states it shares with
// other patterns is numbered in order, so that is where straight paths
// lie.
func straightPaths(nodes []trieNode, states []acState, lanes []laneSpec) []uint8 {
	var intro [256]bool
	for i := range lanes {
		for b, on := range lanes[i].intro {
			intro[b] = intro[b] || on
		}
	}
	out := make([]uint8, len(nodes))
	for u := len(nodes) - 2; u > 0; u-- {
		e := nodes[u].edges
		if len(e) != 1 || e[0].to != int32(u+1) || intro[e[0].b] || states[u+1].info>>outShift != 0 {
			continue
		}
		out[u] = uint8(min(int(out[u+1])+1, 255))
	}
	return out
}

// follow returns how many bytes at the beginning of p, at most n, spell
// the straight path from state s (n at most automaton.straight[s]). The
// state they lead to is s plus that many.
//
// A deep state is a cache miss away from the next, and the scan did the
// same work for each byte of a registered secret, or a near miss of one,
// as for a byte where anything may happen: with follow, the adversarial
// bench's plain near misses went from 95 to 172 MB/s of CPU time, its
// plain hits from 92 to 149. It is kept within the inliner's budget, as
// hit is.
func (a *automaton) follow(s int32, p []byte, n int) int {
	n = min(n, len(p))
	e := a.edgeByte[a.states[s].next:][:n]
	m := 0
	for ; m+8 <= n; m += 8 {
		if x := binary.LittleEndian.Uint64(p[m:]) ^ binary.LittleEndian.Uint64(e[m:]); x != 0 {
			return m + bits.TrailingZeros64(x)/8
		}
	}
	for m < n && p[m] == e[m] {
		m++
	}
	return m
}

// next is the transition function; the stream inlines the same loop.
func (a *automaton) next(s int32, b byte) int32 {
	for {
		st := &a.states[s]
		n := st.info & 0xff
		if n == denseEdges {
			return a.rows[int(st.next)<<8|int(b)]
		}
		for e := st.next; e < st.next+int32(n); e++ {
			if a.edgeByte[e] == b {
				return a.edgeNext[e]
			}
		}
		s = st.fail
	}
}

// children calls fn with each edge of the trie below state s, the byte and
// the state it leads to, until fn returns false. A full row also holds the
// transitions that fall back along failure links; its children are the
// states one deeper than s.
func (a *automaton) children(s int32, fn func(b byte, v int32) bool) {
	st := &a.states[s]
	if n := st.info & 0xff; n != denseEdges {
		for e := st.next; e < st.next+int32(n); e++ {
			if !fn(a.edgeByte[e], a.edgeNext[e]) {
				return
			}
		}
		return
	}
	row := a.rows[int(st.next)<<8 : int(st.next+1)<<8]
	for c, v := range row {
		if a.states[v].depth == st.depth+1 && !fn(byte(c), v) {
			return
		}
	}
}

// isolated reports whether text leads from the root to a state that has
// no children and whose failure link is the root: no pattern extends text,
// and none starts inside it after its first byte. Once text is matched the
// automaton is back at the root.
func (a *automaton) isolated(text string) bool {
	s := int32(0)
	for i := 0; i < len(text); i++ {
		s = a.next(s, text[i])
	}
	st := &a.states[s]
	return int(st.depth) == len(text) && st.info&0xff == 0 && st.fail == 0
}

// held returns how many of the bytes that state s stands for must be held:
// the longest suffix that is a prefix of a holding pattern.
func (a *automaton) held(s int32) int32 {
	return a.heldBy(s, flagHolding)
}

// heldBy is held for the patterns whose prefixes carry flag.
func (a *automaton) heldBy(s int32, flag uint32) int32 {
	for s != 0 && a.states[s].info&flag == 0 {
		s = a.states[s].fail
	}
	return a.states[s].depth
}

// size returns the approximate memory of the tables in bytes, counting
// those shared with other automata (the generated ones) too.
func (a *automaton) size() int {
	return len(a.states)*16 + len(a.rows)*4 + len(a.edgeByte)*5 + (filterWords+needleWords)*8 + len(a.needleCheck) + 1<<16
}
