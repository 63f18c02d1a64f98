package redact

import "errors"

// The literal matcher is one Aho-Corasick automaton over every needle of
// every secret and every rule trigger, so each byte is looked at once however
// many secrets are registered. States with many children get a full
// 256-entry transition row; the rest keep a short edge list and fall back
// along failure links, which keeps the tables small (a deep state of a random
// secret has one child) while the total work stays linear: each failure hop
// shortens the match, and a byte lengthens it by at most one.

// The stream skips text in which nothing can start using three filters.
//
// The prefix filter holds the first three bytes of every pattern: a
// position whose 3-gram misses it starts nothing. It decides single
// positions.
//
// The stride filters let the skip loop test only some positions. A pattern
// of length at least s+g-1 has, among any s consecutive start offsets, one
// whose g-gram lies inside it; so testing the g-grams at every s-th position
// against a filter holding each pattern's g-grams at s consecutive offsets
// (its window) finds every pattern. Rule patterns are short (three bytes
// for "eyJ" and "://") and use digrams at stride 2, with the window placed
// on digrams that are rare in logs; needles are at least MinSecretLen long
// and use 3-grams at stride 6.
const (
	filterBits  = 17 // the prefix filter: 16 KiB
	filterWords = 1 << filterBits / 64

	// The needle stride filter has about 64 bits per 3-gram, for a false
	// hit rate near 1.5%, within these bounds (128 bytes to 32 KiB): a
	// table no larger than needed stays in L1.
	minNeedleBits = 10
	maxNeedleBits = 18

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
	denseEdges  = 0xff
	flagHolding = 1 << 8 // the state's text is a prefix of a holding pattern
	outShift    = 9
)

// acOut is what ends at a state: the longest needle, and the triggers.
type acOut struct {
	match int32
	trigs []trigger
}

type automaton struct {
	states   []acState
	rows     []int32
	edgeByte []byte
	edgeNext []int32
	outs     []acOut
	// filter has a bit set for the hash of the first three bytes of every
	// pattern (and of every case variant of "aut"): a position whose 3-gram
	// misses cannot start anything, which is what lets the stream skip.
	filter *[filterWords]uint64

	ruleGrams   *[1 << 16]bool // digrams of rule windows, indexed directly
	needleGrams []uint64       // 3-grams of needles at offsets 0 to 5
	needleShift uint32         // 32 minus the filter's bit count
	hasNeedles  bool
	// back is how far before a stride hit a pattern holding the hit gram
	// may start.
	back int
}

// addRuleWindow adds the digrams of text at offsets w and w+1.
func (a *automaton) addRuleWindow(text string, w int) {
	for o := w; o < w+ruleStride; o++ {
		a.ruleGrams[uint16(text[o])|uint16(text[o+1])<<8] = true
	}
	a.back = max(a.back, w+ruleStride-1)
}

func (a *automaton) addNeedleGrams(text string) {
	for o := 0; o < needleStride; o++ {
		h := gramKey(text[o], text[o+1], text[o+2]) * 0x9E3779B1 >> a.needleShift
		a.needleGrams[h>>6] |= 1 << (h & 63)
	}
	a.back = max(a.back, needleStride-1)
	a.hasNeedles = true
}

func gramHash(k uint32) uint32 {
	return (k * 0x9E3779B1) >> (32 - filterBits)
}

func gramKey(b0, b1, b2 byte) uint32 {
	return uint32(b0) | uint32(b1)<<8 | uint32(b2)<<16
}

func (a *automaton) addGram(g string) {
	h := gramHash(gramKey(g[0], g[1], g[2]))
	a.filter[h>>6] |= 1 << (h & 63)
}

// hit reports whether something may start at p[i]; p[i:i+3] must exist.
func (a *automaton) hit(p []byte, i int) bool {
	h := gramHash(gramKey(p[i], p[i+1], p[i+2]))
	return a.filter[h>>6]&(1<<(h&63)) != 0
}

type trieEdge struct {
	b  byte
	to int32
}

type trieNode struct {
	edges   []trieEdge
	depth   int32
	holding bool
	match   int32
	trigs   []trigger
}

// buildAutomaton compiles the patterns. words are the case variants of a
// word matched outside the automaton (the Authorization header name), whose
// beginnings must stop the skip too; their window starts at wordWindow.
func buildAutomaton(pats []pattern, words []string, wordWindow int) (*automaton, error) {
	nodes := []trieNode{{}}
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
		ruleGrams: new([1 << 16]bool),
	}
	needles := 0
	for _, p := range pats {
		if p.needle {
			needles++
		}
	}
	nbits := minNeedleBits
	for nbits < maxNeedleBits && 1<<nbits < 64*needleStride*needles {
		nbits++
	}
	a.needleGrams = make([]uint64, 1<<nbits/64)
	a.needleShift = uint32(32 - nbits)
	for _, p := range pats {
		// Every pattern is at least three bytes long, which the filter needs,
		// and every needle at least needleStride+2.
		a.addGram(p.text)
		if p.needle {
			a.addNeedleGrams(p.text)
		} else {
			a.addRuleWindow(p.text, p.window)
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
			u = v
		}
		if p.needle {
			nodes[u].match = max(nodes[u].match, int32(len(p.text)))
		} else {
			nodes[u].trigs = append(nodes[u].trigs, p.trig)
		}
	}
	for _, v := range words {
		a.addGram(v)
		a.addRuleWindow(v, wordWindow)
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
		out := acOut{match: n.match, trigs: n.trigs}
		if k := outIndex[fail[u]]; u != 0 && k > 0 {
			// Own triggers come first: they are the longest, so when a rule
			// has two ending here the earlier start wins.
			inherited := a.outs[k-1]
			out.match = max(out.match, inherited.match)
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
		st.next = int32(len(a.edgeByte))
		st.info |= uint32(len(n.edges))
		for _, e := range n.edges {
			a.edgeByte = append(a.edgeByte, e.b)
			a.edgeNext = append(a.edgeNext, e.to)
		}
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

// held returns how many of the bytes that state s stands for must be held:
// the longest suffix that is a prefix of a holding pattern.
func (a *automaton) held(s int32) int32 {
	for s != 0 && a.states[s].info&flagHolding == 0 {
		s = a.states[s].fail
	}
	return a.states[s].depth
}

// size returns the approximate memory of the tables in bytes.
func (a *automaton) size() int {
	return len(a.states)*16 + len(a.rows)*4 + len(a.edgeByte)*5 + (filterWords+len(a.needleGrams))*8 + 1<<16
}
