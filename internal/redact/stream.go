package redact

import (
	"encoding/binary"
	"math/bits"
)

// maxPending is how many redacted spans may be found between two releases.
// Spans behind a held candidate cannot be released, so the queue may grow
// past it, up to one span per held byte; the next release then waits for
// maxPending more, which keeps the work per span constant.
const maxPending = 64

// interval is a redacted span [s, e) in absolute input positions.
type interval struct {
	s, e int64
}

// Stream is one redacted stream. It is not safe for concurrent use.
//
// The stream tracks absolute input positions: pos is the number of bytes
// fed so far, and every byte before emitted has been written out, as itself
// or inside a marker; hold keeps the bytes [emitted, pos).
type Stream struct {
	r *Redactor

	state  int32 // automaton state
	active uint32
	rs     [numRules]ruleState
	pem    pemState
	auth   authState
	urlPct urlPctState

	// lanes decode the escaping families (lane.go); detachedSet has a
	// bit for each that is not following the raw scan.
	lanes       []lane
	detachedSet uint32

	pending   []interval // sorted, disjoint, not adjacent
	pendLimit int        // release once pending is longer
	hold      []byte
	// before has the raw bytes just before hold, as far as the stream
	// has them (rawAt): a token rule looks behind its trigger.
	before   [maxLookBehind]byte
	pos      int64
	emitted  int64
	markOpen bool // the output ends with a marker covering up to emitted
	done     bool

	// During a Redact call: the output so far, the caller's bytes, and the
	// position of cur[0]; hold then covers [curBase-len(hold), curBase).
	dst     []byte
	cur     []byte
	curBase int64

	hops int64 // failure-link hops, for the linear-time test
}

// Redact appends to dst the bytes of p that are now safe to release, with
// every credential replaced by Marker, and returns dst. Bytes that may
// still turn out to be part of a credential are held back until a later
// call or Flush decides them. p is not retained, and dst must not overlap
// p: a marker may be longer than what it replaces. After Flush, Redact
// appends nothing.
func (s *Stream) Redact(dst, p []byte) []byte {
	if s.done {
		return dst
	}
	s.dst, s.cur, s.curBase = dst, p, s.pos
	a := s.r.ac
	for i := 0; i < len(p); {
		if s.state == 0 && s.auth.k == 0 && s.auth.phase == authIdle && s.quiet() && !s.r.exact {
			stop := len(p)
			if s.active != 0 {
				// A watched userinfo goes on to the first byte outside it,
				// which the exact scan must see.
				stop = i
				for stop < len(p) && classURLUser[p[stop]] {
					stop++
				}
			}
			from := i
			i = a.skip(p, i, stop, s.active == 0 && s.r.urlFast)
			if s.lanes != nil {
				s.pass(p, from, min(i, len(p)))
			}
			if i >= len(p) {
				break
			}
		}
		i = s.scan(p, i)
		if len(s.pending) > s.pendLimit {
			s.release(s.frontier(s.curBase + int64(i)))
			s.pendLimit = len(s.pending) + maxPending
		}
	}
	s.pos = s.curBase + int64(len(p))
	s.release(s.frontier(s.pos))
	s.pendLimit = len(s.pending) + maxPending
	s.retain()
	dst = s.dst
	s.dst, s.cur = nil, nil
	return dst
}

// minTail is the shortest held-back tail that Flush replaces by the
// marker: a shorter one is released as is.
const minTail = 3

// Flush ends the stream: it decides the held-back bytes, appends them to
// dst and returns dst. A held-back tail of three or more bytes that could
// still have become a credential is replaced by Marker; a shorter one is
// released as is. The Stream may not be used after.
func (s *Stream) Flush(dst []byte) []byte {
	if s.done {
		return dst
	}
	s.dst, s.cur, s.curBase = dst, nil, s.pos
	if f := s.frontierAt(s.pos, true); s.pos-f >= minTail {
		s.addInterval(f, s.pos)
	}
	s.release(s.pos)
	dst = s.dst
	*s = Stream{r: s.r, done: true}
	return dst
}

// Held reports how many input bytes are currently held back.
func (s *Stream) Held() int {
	return int(s.pos - s.emitted)
}

// skip returns the first index in [i, stop) at which something may start,
// or stop if there is none; near the end of p, where 4-grams are not known
// yet, it returns the first index it cannot decide. Every position it
// passes is refuted by bytes of p: no pattern can start there.
//
// With urls (set when no rule runs, and Redactor.urlFast holds) it also
// passes a URL trigger after which urlInert finds that the URL rule would
// end without redacting anything: the trigger leaves the automaton at its
// root, so skipping resumes right after it, and the userinfo is skipped
// like any other text.
func (a *automaton) skip(p []byte, i, stop int, urls bool) int {
	for {
		q := a.skipTo(p, i, stop)
		if !urls || q+len(urlTrigger) > len(p) || string(p[q:q+len(urlTrigger)]) != urlTrigger ||
			!urlInert(p, q+len(urlTrigger)) {
			return q
		}
		i = q + len(urlTrigger)
	}
}

// skipTo is skip without the URL shortcut.
func (a *automaton) skipTo(p []byte, i, stop int) int {
	rg, ng := a.ruleGrams, a.needleGrams
	// The shift is below 32; saying so spares the check for larger ones.
	shift := a.needleShift & 31
	x := i
	last := min(stop-needleStride-1, len(p)-needleStride-8)
	for a.needleless {
		var hit bool
		if x, hit = a.ruleRounds(p, x, last); !hit {
			break
		}
		if q := a.admit(p, i, x, stop, binary.LittleEndian.Uint64(p[x:])); q < stop {
			return a.settle(p, i, x, q)
		}
		x += needleStride
	}
	// Each round tests the digrams at x, x+2 and x+4 and the 3-gram at x.
	// Two rounds go together, and one branch tells whether either had a
	// hit: with one round per iteration, the loop ran at about three
	// quarters of the speed.
	for ; x <= last; x += 2 * needleStride {
		w := binary.LittleEndian.Uint64(p[x : x+8])
		v := binary.LittleEndian.Uint64(p[x+needleStride : x+needleStride+8])
		hw := needleHash(uint32(w)&0xffffff, shift)
		hv := needleHash(uint32(v)&0xffffff, shift)
		mw := uint64(rg[uint16(w)]|rg[uint16(w>>16)]|rg[uint16(w>>32)]) | ng[hw>>6%needleWords]>>(hw&63)&1
		mv := uint64(rg[uint16(v)]|rg[uint16(v>>16)]|rg[uint16(v>>32)]) | ng[hv>>6%needleWords]>>(hv&63)&1
		if mw|mv == 0 {
			continue
		}
		if mw != 0 {
			if q := a.admit(p, i, x, stop, w); q < stop {
				return a.settle(p, i, x, q)
			}
		}
		if mv != 0 {
			if q := a.admit(p, i, x+needleStride, stop, v); q < stop {
				return a.settle(p, i, x+needleStride, q)
			}
		}
	}
	for ; x < stop && x+8 <= len(p); x += needleStride {
		if q := a.admit(p, i, x, stop, binary.LittleEndian.Uint64(p[x:x+8])); q < stop {
			return a.settle(p, i, x, q)
		}
	}
	// The starts whose stride tests lie beyond x were not decided.
	for q := max(i, x-a.back); q < stop; q++ {
		if q+4 > len(p) || a.hit(binary.LittleEndian.Uint32(p[q:])) {
			return q
		}
	}
	return stop
}

// ruleRounds is the skip loop of an automaton without needles, which has
// only the rule digrams to test: it returns the first round from x on
// that has a hit, and true, or a round past last, and false. It calls
// nothing, so that its values stay in registers (with admit called from
// the loop, as where there are needles, they are reloaded each round).
// Log text with no secret registered went through the redactor 33 to 43%
// faster with it (BenchmarkRedact and BenchmarkRedactGuardian, no
// secrets: 1.69 to 2.24 and 1.98 to 2.83 GB/s), at 39% fewer
// instructions.
func (a *automaton) ruleRounds(p []byte, x, last int) (int, bool) {
	rg := a.ruleGrams
	for ; x <= last; x += 2 * needleStride {
		w := binary.LittleEndian.Uint64(p[x : x+8])
		v := binary.LittleEndian.Uint64(p[x+needleStride : x+needleStride+8])
		rw := rg[uint16(w)] | rg[uint16(w>>16)] | rg[uint16(w>>32)]
		if rw|rg[uint16(v)]|rg[uint16(v>>16)]|rg[uint16(v>>32)] != 0 {
			if rw == 0 {
				x += needleStride
			}
			return x, true
		}
	}
	return x, false
}

// admit tests the starts that the stride hits of the round at x of skipTo
// name, w being the round's first 8 bytes, and returns the first in
// [i, lim) that the prefix filter admits, or lim if there is none. Every
// other start the round's hits could belong to is refuted.
func (a *automaton) admit(p []byte, i, x, lim int, w uint64) int {
	k := uint32(w) & 0xffffff
	if h := needleHash(k, a.needleShift&31); a.needleGrams[h>>6%needleWords]&(1<<(h&63)) != 0 {
		// From the farthest offset, the earliest start, on: the first
		// admitted is the one sought. An escaped secret's 3-grams ("\\u0",
		// "u00") lie at every offset of many needles: stopping there took
		// 1.2 to 1.7% off the instructions of the escaped cases of the
		// adversarial bench, and a tenth of their mispredicted branches
		// (cachegrind's model).
		for offs := a.needleCheck[needleHash2(k, a.needleShift)]; offs != 0; {
			o := bits.Len8(offs) - 1
			offs &^= 1 << o
			if q := x - o; q >= i && q < lim && a.hit(binary.LittleEndian.Uint32(p[q:])) {
				lim = q
				break
			}
		}
	}
	// A rule digram is rare where a needle 3-gram hits: looking for one
	// before the loop took 2 to 3% off the instructions of the
	// adversarial bench.
	rg := a.ruleGrams
	if rg[uint16(w)]|rg[uint16(w>>16)]|rg[uint16(w>>32)] == 0 {
		return lim
	}
	for y, d := range [...]uint16{uint16(w), uint16(w >> 16), uint16(w >> 32)} {
		for offs := rg[d]; offs != 0; offs &= offs - 1 {
			if q := x + 2*y - bits.TrailingZeros8(offs); q >= i && q < lim && a.hit(binary.LittleEndian.Uint32(p[q:])) {
				lim = q
			}
		}
	}
	return lim
}

// settle returns the first start in [i, lim] that may begin something,
// given that the rounds of skipTo up to x have refuted every start before
// lim whose stride tests they made, and the prefix filter admits lim. The
// other starts before lim have their tests in the next round (a start lies
// at most back before its test, and lim at most needleStride-2 after x),
// which decides them when p holds it.
func (a *automaton) settle(p []byte, i, x, lim int) int {
	if y := x + needleStride; y+8 <= len(p) {
		return a.admit(p, i, y, lim, binary.LittleEndian.Uint64(p[y:y+8]))
	}
	for q := max(i, x+needleStride-a.back); q < lim; q++ {
		if a.hit(binary.LittleEndian.Uint32(p[q:])) {
			return q
		}
	}
	return lim
}

// scan runs the exact byte-by-byte machine from p[i] until every matcher is
// back at rest with no candidate alive (a URL whose userinfo is being
// watched may stay: it reacts only to the byte that ends it), the end of p,
// or a full queue. It processes at least one byte and returns the next
// index.
func (s *Stream) scan(p []byte, i int) int {
	a := s.r.ac
	rules := s.r.rules
	straight := a.straight
	if s.r.exact {
		straight = nil
	}
	st := s.state
	ak := s.auth.k
	for i < len(p) {
		if straight != nil && a.states[st].info&0xff == 1 && straight[st] != 0 &&
			s.active == 0 && s.auth.phase == authIdle && s.detachedSet == 0 {
			// On a straight path nothing ends, no lane detaches and no
			// rule runs: only the Authorization header name may show up.
			m := a.follow(st, p[i:], int(straight[st]))
			if rules {
				for t := 0; t < m; t++ {
					if ak == 0 {
						// Only the name's first letter leaves state 0.
						if t += authStart(p[i+t : i+m]); t == m {
							break
						}
					}
					k := authDFA[ak][p[i+t]]
					if int(k) == len(authWord) {
						m = t
						break
					}
					ak = k
				}
			}
			if m > 0 {
				st += int32(m)
				i += m
				continue
			}
		}
		b := p[i]
		j := s.curBase + int64(i)
		if s.active != 0 {
			s.advance(b, j)
		}
		prev := st
		if rules {
			if s.auth.phase != authIdle {
				s.authPhase(b, j)
			}
			ak = authDFA[ak][b]
			if int(ak) == len(authWord) && s.auth.phase != authCred {
				s.auth.phase = authName
				s.auth.quote = false
				s.auth.field = false
				s.auth.valQuote = 0
				s.auth.nameQuote = 0
				if q, ok := s.rawAt(j - int64(len(authWord))); ok && (q == '"' || q == '\'') {
					s.auth.nameQuote = q
				}
				s.auth.pct = 0
				s.auth.encoded = false
			}
		}
		for {
			x := &a.states[st]
			n := x.info & 0xff
			if n == denseEdges {
				st = a.rows[int(x.next)<<8|int(b)]
				break
			}
			e, end := x.next, x.next+int32(n)
			for e < end && a.edgeByte[e] != b {
				e++
			}
			if e < end {
				st = a.edgeNext[e]
				break
			}
			st = x.fail
			s.hops++
		}
		x := &a.states[st]
		if k := x.info >> outShift; k != 0 {
			out := &a.outs[k-1]
			if out.match > 0 {
				s.addInterval(j+1-int64(out.match), j+1)
			}
			for _, t := range out.trigs {
				s.start(t, j+1-int64(t.length))
			}
		}
		if s.detachedSet != 0 || s.r.intro[b] != 0 {
			s.stepLanes(p, i, j, prev, st)
		}
		i++
		if s.auth.phase == authIdle && s.quiet() {
			// Every candidate still alive starts within the last d bytes;
			// when none of their 4-grams can start a pattern they are all
			// doomed, and the fast skip may take over (carrying the lanes
			// that are detached).
			d := max(int(x.depth), int(ak))
			if d <= 3 && s.doomed(p, i-d, i) {
				s.state = 0
				s.auth.k = 0
				return i
			}
		}
		if len(s.pending) > s.pendLimit {
			break
		}
	}
	s.state = st
	s.auth.k = ak
	return i
}

// authStart returns the index in b of the first byte that may begin the
// Authorization header name, 'a' or 'A', or len(b), looking at eight
// bytes at a time. authDFA takes a load that depends on the last for each
// byte, and the scan ran it over every byte of a followed needle:
// skipping to the name's first letter took the adversarial bench's plain
// cases from about 193 to 232 MB/s (hits: 177 to 220), with 13% fewer
// instructions.
func authStart(b []byte) int {
	const ones, highs, as = 0x0101010101010101, 0x8080808080808080, 0x6161616161616161
	n := 0
	for ; n+8 <= len(b); n += 8 {
		// A zero byte of x is an 'a' of b, in either case.
		x := (binary.LittleEndian.Uint64(b[n:]) | 0x2020202020202020) ^ as
		if z := (x - ones) &^ x & highs; z != 0 {
			return n + bits.TrailingZeros64(z)/8
		}
	}
	for ; n < len(b) && b[n]|0x20 != 'a'; n++ {
	}
	return n
}

// quiet reports whether no rule holds or suppresses: none runs, or only the
// URL rule watches a userinfo.
func (s *Stream) quiet() bool {
	return s.active == 0 || s.active == 1<<ruleURL && s.rs[ruleURL].phase == phWatch
}

// doomed reports whether no pattern can start at any of p[from:to], judging
// by 4-grams inside p only.
func (s *Stream) doomed(p []byte, from, to int) bool {
	if from < 0 || to+3 > len(p) {
		return from == to
	}
	for q := from; q < to; q++ {
		if s.r.ac.hit(binary.LittleEndian.Uint32(p[q:])) {
			return false
		}
	}
	return true
}

// frontier returns the earliest position at which a credential may still
// start: no byte before it can become part of a new redacted span.
func (s *Stream) frontier(pos int64) int64 {
	return s.frontierAt(pos, false)
}

// frontierAt is frontier; final says the stream ends at pos.
func (s *Stream) frontierAt(pos int64, final bool) int64 {
	held := s.r.ac.held(s.state)
	if final {
		// At the end only what may be secret material counts: a prefix of
		// a needle, or a token begun after its rule's prefix; not the
		// prefix of a trigger, which is no secret ("git" of github_pat_,
		// the dashes of a certificate's END line).
		held = s.r.ac.heldBy(s.state, flagNeedleHolding)
	}
	f := pos - int64(held)
	for i := range s.lanes {
		f = min(f, s.lanes[i].frontier(s, pos, final))
	}
	if s.auth.phase == authSpace && s.auth.pct != 0 {
		// An escape after the scheme may be the credential's first byte.
		f = min(f, s.auth.pctStart)
	}
	if s.auth.phase == authCred && s.auth.credLen < MinSecretLen {
		f = min(f, s.auth.credStart) // too short yet to be one
	}
	if s.active&(1<<ruleURLPct) != 0 && s.rs[ruleURLPct].phase == phSuppress && s.urlPct.n != 0 {
		// An escape after a confirmed password may go on with it.
		f = min(f, s.urlPct.from)
	}
	for m := s.active; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		rs := &s.rs[i]
		if final && i < numTokenRules && rs.n == 0 {
			continue // "ghp_" alone
		}
		if final && (i == ruleURL || i == ruleURLPct) {
			// No '@' can follow now: a password candidate ("localhost:8080")
			// is none, and the host after an '@' stays the host.
			continue
		}
		if rs.phase == phHold && rs.start < f {
			f = rs.start
		}
	}
	return f
}

// addInterval records the redacted span [a, e), merging it with the spans
// it overlaps or touches.
func (s *Stream) addInterval(a, e int64) {
	if a >= e {
		return
	}
	q := s.pending
	hi := len(q)
	for hi > 0 && q[hi-1].s > e {
		hi--
	}
	lo := hi
	for lo > 0 && q[lo-1].e >= a {
		lo--
		a = min(a, q[lo].s)
		e = max(e, q[lo].e)
	}
	if lo == hi {
		q = append(q, interval{})
		copy(q[lo+1:], q[lo:])
	} else {
		q = append(q[:lo+1], q[hi:]...)
	}
	q[lo] = interval{a, e}
	s.pending = q
}

// release writes out everything before f: the raw bytes, and a marker for
// each run of redacted spans. A span touching the marker just written joins
// it, whatever f is, since nothing separates them.
func (s *Stream) release(f int64) {
	k := 0
	for ; k < len(s.pending); k++ {
		iv := s.pending[k]
		if s.markOpen && iv.s <= s.emitted {
			s.emitted = max(s.emitted, iv.e)
			continue
		}
		if iv.s > f {
			break
		}
		s.emitRaw(s.emitted, iv.s)
		s.dst = append(s.dst, Marker...)
		s.markOpen = true
		s.emitted = iv.e
	}
	if k > 0 {
		s.pending = append(s.pending[:0], s.pending[k:]...)
	}
	if f > s.emitted {
		s.emitRaw(s.emitted, f)
		s.markOpen = false
		s.emitted = f
	}
}

func (s *Stream) emitRaw(from, to int64) {
	if from >= to {
		return
	}
	if from < s.curBase {
		end := min(to, s.curBase)
		base := s.curBase - int64(len(s.hold))
		s.dst = append(s.dst, s.hold[from-base:end-base]...)
		from = end
	}
	if from < to {
		s.dst = append(s.dst, s.cur[from-s.curBase:to-s.curBase]...)
	}
}

// retain keeps the bytes [emitted, pos) for the next call.
func (s *Stream) retain() {
	var before [maxLookBehind]byte
	for k := range before {
		before[k], _ = s.rawAt(s.emitted - maxLookBehind + int64(k))
	}
	s.before = before
	if s.emitted >= s.curBase {
		s.hold = append(s.hold[:0], s.cur[s.emitted-s.curBase:]...)
		return
	}
	base := s.curBase - int64(len(s.hold))
	n := copy(s.hold, s.hold[s.emitted-base:])
	s.hold = append(s.hold[:n], s.cur...)
}

// maxLookBehind is how far before the data in hand rawAt reaches: the
// glueBehind bytes that glued reads before a trigger, from
// the trigger's first byte, which may lie up to the longest trigger less
// one before the data in hand. The trigger's bytes are held while it may
// complete, but not while another rule redacts them as they come:
// xoxb-ACCAsk-proj- had its "A" released inside the Slack token's marker
// when sk-proj- completed, and read one byte at a time, the OpenAI rule
// started where whole it did not (TestLookBehindCoversTriggers).
const maxLookBehind = 64

// rawAt returns the input byte at position pos during a Redact call: one
// of the caller's, one held, or one of the maxLookBehind before those.
func (s *Stream) rawAt(pos int64) (byte, bool) {
	base := s.curBase - int64(len(s.hold))
	switch {
	case pos < 0 || pos < base-maxLookBehind || pos >= s.curBase+int64(len(s.cur)):
		return 0, false
	case pos >= s.curBase:
		return s.cur[pos-s.curBase], true
	case pos >= base:
		return s.hold[pos-base], true
	}
	return s.before[pos-(base-maxLookBehind)], true
}
