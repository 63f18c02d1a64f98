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

	pending   []interval // sorted, disjoint, not adjacent
	pendLimit int        // release once pending is longer
	hold      []byte
	pos       int64
	emitted   int64
	markOpen  bool // the output ends with a marker covering up to emitted
	done      bool

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
			if i = a.skip(p, i, stop); i >= len(p) {
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

// Flush ends the stream: it decides the held-back bytes, appends them to
// dst and returns dst. A held-back tail of three or more bytes that could
// still have become a credential is replaced by Marker; a shorter one is
// released as is. The Stream may not be used after.
func (s *Stream) Flush(dst []byte) []byte {
	if s.done {
		return dst
	}
	s.dst, s.cur, s.curBase = dst, nil, s.pos
	if f := s.frontier(s.pos); s.pos-f >= 3 {
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
// or stop if there is none; near the end of p, where 3-grams are not known
// yet, it returns the first index it cannot decide. Every position it
// passes is refuted by bytes of p: no pattern can start there.
func (a *automaton) skip(p []byte, i, stop int) int {
	rg, ng, f := a.ruleGrams, a.needleGrams, a.filter
	shift, needles := a.needleShift, a.hasNeedles
	x := i
	// Each round tests the digrams at x, x+2 and x+4 and, with needles, the
	// 3-gram at x; a hit is resolved position by position over every start
	// that the hit gram may belong to.
	for x < stop && x+8 <= len(p) {
		w := binary.LittleEndian.Uint64(p[x:])
		m := rg[uint16(w)] || rg[uint16(w>>16)] || rg[uint16(w>>32)]
		if needles && !m {
			h := (uint32(w) & 0xffffff) * 0x9E3779B1 >> shift
			m = ng[h>>6]&(1<<(h&63)) != 0
		}
		if m {
			end := min(x+needleStride, stop)
			for q := max(i, x-a.back); q < end; q++ {
				h := gramHash(gramKey(p[q], p[q+1], p[q+2]))
				if f[h>>6]&(1<<(h&63)) != 0 {
					return q
				}
			}
		}
		x += needleStride
	}
	// The starts whose stride tests lie beyond x were not decided.
	for q := max(i, x-a.back); q < stop; q++ {
		if q+3 > len(p) || a.hit(p, q) {
			return q
		}
	}
	return stop
}

// scan runs the exact byte-by-byte machine from p[i] until every matcher is
// back at rest with no candidate alive (a URL whose userinfo is being
// watched may stay: it reacts only to the byte that ends it), the end of p,
// or a full queue. It processes at least one byte and returns the next
// index.
func (s *Stream) scan(p []byte, i int) int {
	a := s.r.ac
	rules := s.r.rules
	st := s.state
	ak := s.auth.k
	for i < len(p) {
		b := p[i]
		j := s.curBase + int64(i)
		if s.active != 0 {
			s.advance(b, j)
		}
		if rules {
			if s.auth.phase != authIdle {
				s.authPhase(b, j)
			}
			ak = authDFA[ak][b]
			if int(ak) == len(authWord) && s.auth.phase != authCred {
				s.auth.phase = authName
				s.auth.quote = false
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
		i++
		if s.auth.phase == authIdle && s.quiet() {
			// Every candidate still alive starts within the last d bytes;
			// when none of their 3-grams can start a pattern they are all
			// doomed, and the fast skip may take over.
			d := max(int(x.depth), int(ak))
			if d <= 2 && s.doomed(p, i-d, i) {
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

// quiet reports whether no rule holds or suppresses: none runs, or only the
// URL rule watches a userinfo.
func (s *Stream) quiet() bool {
	return s.active == 0 || s.active == 1<<ruleURL && s.rs[ruleURL].phase == phWatch
}

// doomed reports whether no pattern can start at any of p[from:to], judging
// by 3-grams inside p only.
func (s *Stream) doomed(p []byte, from, to int) bool {
	if from < 0 || to+2 > len(p) {
		return from == to
	}
	for q := from; q < to; q++ {
		if s.r.ac.hit(p, q) {
			return false
		}
	}
	return true
}

// frontier returns the earliest position at which a credential may still
// start: no byte before it can become part of a new redacted span.
func (s *Stream) frontier(pos int64) int64 {
	f := pos - int64(s.r.ac.held(s.state))
	for m := s.active; m != 0; m &= m - 1 {
		rs := &s.rs[bits.TrailingZeros32(m)]
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
	if s.emitted >= s.curBase {
		s.hold = append(s.hold[:0], s.cur[s.emitted-s.curBase:]...)
		return
	}
	base := s.curBase - int64(len(s.hold))
	n := copy(s.hold, s.hold[s.emitted-base:])
	s.hold = append(s.hold[:n], s.cur...)
}
