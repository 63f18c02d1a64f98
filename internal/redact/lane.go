package redact

import (
	"math/bits"
	"unicode/utf8"
)

// A lane reads the stream as one escaping family writes it: it decodes the
// family's escapes (or collapses its runs) and feeds what they stand for to
// the same automaton as the raw bytes, reporting the needles marked for the
// family (the secret itself, its lines, its collapsed form; see pattern).
// So "secret char or any spelling of it" is matched in one pass with one
// automaton: each lane is only a cursor over its tables.
//
// A lane costs nothing while the decoded text equals the raw text: it is
// attached to the raw scan, its state the raw state. It detaches at a byte
// that may begin one of its escapes, taking a copy of the raw state, and
// attaches again once its state equals the raw state with no escape in
// the last depth-of-state decoded bytes (so that both stand for the same
// bytes at the same positions, and the raw matches cover the lane's). A
// detached lane remembers, for each decoded byte it may still need, the
// raw position it came from (ring), so that a match becomes a raw span.
//
// The skip (automaton.skip) passes only positions at which no spelling of
// a lane's needle can begin: the filters hold every spelling's first bytes
// (family.go). When it resumes at q, an escape of the passed text may
// still be open at q; resync reads the bytes before q again, decoding only,
// so that each lane splits the text into escapes exactly where a scan of
// every byte would. Nothing decoded before q is fed to the automaton: every
// match it could begin would begin at a position the skip refuted.
//
// The raw scan does not wait for a detached lane: once its own candidates
// are doomed the skip goes on, and the lane is carried over the passed
// text on its own (carry), decoding each escape at once and following the
// automaton's straight paths eight bytes at a time, until every candidate
// it follows began in the passed text, which dooms them too. Where the
// skip stops while a lane follows a candidate, and where a byte of the raw
// scan detaches an escape lane, the lane runs ahead of the raw scan in the
// same way (runAhead), and the raw scan leaves it alone until it catches
// up.

// Lane kinds: which needles a lane reports.
const (
	laneEscape = iota
	laneSpace
)

type lane struct {
	fam   *family
	kind  int
	index uint8 // in Stream.lanes
	// flag marks the prefixes of the needles the lane reports (holdFlag).
	flag uint32
	// intro marks the bytes that may begin an escape or a run; first,
	// second and oneByte are the laneSpec's.
	intro   *[256]bool
	first   *[256]uint32
	second  *[256]uint32
	oneByte uint32

	detached bool
	// pos is the raw position of the next byte the lane reads: it may run
	// ahead of the raw scan (runAhead), which then leaves it alone until
	// it catches up, detached or attached from pos on.
	pos      int64
	state    int32
	k        int64 // decoded bytes since the lane detached
	since    int32 // decoded bytes since the last escape or run
	esc      [maxEscape + 1]byte
	escLen   int
	escLive  uint32 // the escapes the pending bytes may still be
	escStart int64
	inRun    bool
	runStart int64
	ring     []int64 // raw start of decoded byte k at ring[k&(len-1)]
	// The decoded bytes from rowK to rowK+rowN, read along a straight
	// path (along) or before the lane detached, are raw bytes that
	// stand for themselves, in a row from raw position rowJ: their
	// starts are written into the ring (flush) only when the next row
	// comes, and dropped when the lane attaches first, as it does after
	// most escaped secrets and near misses, read along a path or two to
	// their end. Filling the ring at once cost the adversarial bench's
	// escaped cases 3% of their instructions (the whitespace ones, whose
	// rows are lines of 7 bytes, gain nothing and lose 0.8%).
	rowK, rowJ, rowN int64
}

// laneSpec is what a Redactor knows of one of its lanes.
type laneSpec struct {
	fam   *family
	kind  int
	intro [256]bool
	// first has, for each byte, the escapes that begin with it; second,
	// the escapes that may have it second (all of those whose prefix is
	// one byte, an ident escape only for its class: the backslash
	// family's before punctuation would otherwise be parsed after every
	// \u, which cost the adversarial bench's backslash near misses 2.4%
	// of their instructions). oneByte has the escapes that are one byte
	// long.
	//
	// An escape is parsed anew from its first byte each time a byte joins
	// it, for each escape it may still be: 14 of them after a backslash.
	// Knowing that none is complete after one byte, and which are left
	// after two, took the adversarial bench's backslash near misses from
	// 63 to 92 MB/s of CPU time.
	first, second [256]uint32
	oneByte       uint32
}

// newLanes makes the lanes of a stream.
func newLanes(specs []laneSpec) []lane {
	if len(specs) == 0 {
		return nil
	}
	ls := make([]lane, len(specs))
	for i := range specs {
		sp := &specs[i]
		ls[i] = lane{fam: sp.fam, kind: sp.kind, index: uint8(i), flag: holdFlag(sp), intro: &sp.intro, first: &sp.first, second: &sp.second, oneByte: sp.oneByte}
	}
	return ls
}

// holdFlag is the state flags of the prefixes of the needles a lane
// reports, which it holds.
func holdFlag(sp *laneSpec) uint32 {
	switch {
	case sp.kind == laneSpace:
		return flagSpaceHolding
	case sp.fam.base64Only:
		return flagPctHolding
	case sp.fam.byteSlots:
		return flagEscHolding | flagPctHolding
	}
	return flagEscHolding
}

// reports says whether the lane reports needle p: those whose prefixes
// carry its holdFlag.
func (sp *laneSpec) reports(p pattern) bool {
	switch {
	case sp.kind == laneSpace:
		return p.space
	case sp.fam.base64Only:
		return p.pct
	}
	return p.esc || p.pct && sp.fam.byteSlots
}

// opens reports whether an escape of the lane's family may begin at raw
// position j, given the bytes before it (family.after). They are always
// at hand: j is a byte of the caller's, and rawAt reaches 64 bytes before
// those.
func (l *lane) opens(s *Stream, j int64) bool {
	return l.fam.after == nil || l.opensAfter(s, j)
}

// opensAfter is opens for a family with a class of bytes before its
// escapes. Apart, opens is inlined for the others, at each byte that
// may begin an escape: 0.6 to 0.9% of the instructions of the
// adversarial bench's escaped cases.
func (l *lane) opensAfter(s *Stream, j int64) bool {
	f := l.fam
	// From the byte before j back: a break right after another one, or
	// after a space, is refused at its first look.
	from := j - int64(f.afterLen)
	if from >= s.curBase {
		run := s.cur[from-s.curBase : j-s.curBase]
		for k := len(run) - 1; k >= 0; k-- {
			if !f.after[run[k]] {
				return false
			}
		}
		return true
	}
	for k := j - 1; k >= from; k-- {
		if b, ok := s.rawAt(k); !ok || !f.after[b] {
			return false
		}
	}
	return true
}

// stepLanes feeds raw byte p[t], at position j, to every lane that is
// detached and not ahead of it, or that it detaches; prev is the raw state
// before the byte, cur after it. An escape lane reads the byte itself
// (carry) and runs ahead from it, so that it decodes the escape the byte
// begins at once (decodeAt): fed the byte first, it had one byte pending,
// which decodeAt copied with the rest of the escape. That took 3% off the
// instructions of the adversarial bench's escaped cases. A whitespace
// lane it leaves detached stays with the raw scan (see runAhead).
func (s *Stream) stepLanes(p []byte, t int, j int64, prev, cur int32) {
	a := s.r.ac
	b := p[t]
	for m := s.detachedSet | uint32(s.r.intro[b]); m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		l := &s.lanes[i]
		if l.pos > j {
			continue // it ran ahead
		}
		if !l.detached {
			if !l.opens(s, j) {
				continue // b stands for itself here, as in the raw scan
			}
			s.detach(l, prev, j)
		}
		if l.kind == laneEscape {
			s.carry(l, p, t, len(p), true)
			continue
		}
		l.feed(s, b, j, true)
		l.pos = j + 1
		// At the root with nothing pending, every candidate the lane may
		// begin is one the raw scan begins too, with the same bytes at the
		// same positions, until the next byte that detaches the lane.
		if l.escLen == 0 && !l.inRun && (l.state == 0 || l.state == cur && l.since >= a.states[cur].depth) {
			l.detached = false
			s.detachedSet &^= 1 << i
		}
	}
}

// detach starts a lane from the raw state st, whose bytes end just before j.
func (s *Stream) detach(l *lane, st int32, j int64) {
	l.detached = true
	s.detachedSet |= 1 << (l.index)
	l.pos = j
	l.state = st
	d := int64(s.r.ac.states[st].depth)
	if l.ring == nil {
		l.ring = make([]int64, s.r.ringLen)
	}
	l.k = d
	l.rowK, l.rowJ, l.rowN = 0, j-d, d
	l.since = 1 << 30
}

// feed runs raw byte b at position j through the lane's decoder. With live
// unset it only decodes: what the escapes stand for is not fed on.
func (l *lane) feed(s *Stream, b byte, j int64, live bool) {
	f := l.fam
	if f.run != nil {
		if f.run[b] {
			if !l.inRun {
				l.inRun, l.runStart = true, j
			}
			return
		}
		if l.inRun {
			l.inRun = false
			if live {
				l.emit(s, f.runAs, l.runStart, j, true)
			}
		}
		if live {
			l.emit(s, b, j, j+1, false)
		}
		return
	}
	if l.escLen == 0 && (!l.intro[b] || !l.opens(s, j)) {
		if live {
			l.emit(s, b, j, j+1, false)
		}
		return
	}
	if l.escLen == 0 {
		l.escStart = j
		l.escLive = l.first[b]
	}
	l.esc[l.escLen] = b
	l.escLen++
	switch {
	case l.escLen == 1 && l.escLive&l.oneByte == 0:
		return // every escape it may be has more to come
	case l.escLen == 2:
		l.escLive &= l.second[b]
	}
	var buf [8]byte
	var st escStatus
	var out []byte
	st, out, l.escLive = f.decode(l.esc[:l.escLen], buf[:0], l.escLive)
	switch st {
	case escPartial:
		if l.escLen < maxEscape {
			return
		}
	case escDone:
		l.escLen = 0
		from := l.escStart
		if f.bare {
			from = j
		}
		if live {
			for _, c := range out {
				l.emit(s, c, from, j+1, true)
			}
		}
		return
	}
	// Not an escape after all: its first byte is itself, and the rest is
	// read again, since it may begin an escape of its own.
	var rest [maxEscape + 1]byte
	n := copy(rest[:], l.esc[1:l.escLen])
	start := l.escStart
	l.escLen = 0
	if live {
		l.emit(s, l.esc[0], start, start+1, false)
	}
	for t := 0; t < n; t++ {
		l.feed(s, rest[t], start+1+int64(t), live)
	}
}

// emit feeds one decoded byte c, which came from the raw bytes [from, to),
// to the lane's automaton, and records the needles it completes.
func (l *lane) emit(s *Stream, c byte, from, to int64, escaped bool) {
	a := s.r.ac
	mask := int64(len(l.ring) - 1)
	l.ring[l.k&mask] = from
	l.k++
	if escaped {
		l.since = 0
	} else if l.since < 1<<30 {
		l.since++
	}
	l.state = a.next(l.state, c)
	if k := a.states[l.state].info >> outShift; k != 0 {
		out := &a.outs[k-1]
		var m int32
		switch l.flag {
		case flagEscHolding:
			m = out.esc
		case flagEscHolding | flagPctHolding:
			m = max(out.esc, out.pct)
		case flagPctHolding:
			m = out.pct
		case flagSpaceHolding:
			m = out.space
		}
		if m > 0 {
			s.addInterval(l.at(l.k-int64(m)), to)
		}
	}
}

// frontier returns the earliest raw position the lane may still need,
// or pos.
//
// An open run stands for runAs whatever follows it, so the lane holds what
// the state after runAs holds, not what the state before the run does:
// "mu" before a run of spaces begins "multi-line", but "mu\n" begins no
// needle.
//
// At the end of the stream (final), an open escape counts, and so does the
// needle prefix decoded before it, only if the escape's bytes may go on to
// spell what follows in a needle (mayContinue): "1" begins "1212345678",
// but "1\x0" begins no spelling of it.
//
// Either way the answer depends on the bytes, never on what the lane
// happens to know of the text before them: the scan forgets a state
// (Stream.doomed) and the skip passes a position when the four bytes from
// there begin no spelling, which they can judge only when a write holds
// all four. Holding a prefix that the pending bytes cannot continue would
// redact a tail or not according to the write boundaries.
func (l *lane) frontier(s *Stream, pos int64, final bool) int64 {
	if !l.detached {
		return pos
	}
	a := s.r.ac
	flag := l.flag
	if l.inRun {
		// The run is decoded byte l.k, not yet in the ring.
		switch h := a.heldBy(a.next(l.state, l.fam.runAs), flag); {
		case h > 1:
			return l.at(l.k + 1 - int64(h))
		case h == 1:
			return l.runStart
		}
		return pos
	}
	if l.escLen > 0 && final {
		e := l.esc[:l.escLen]
		for st := l.state; st != 0; st = a.states[st].fail {
			if a.states[st].info&flag != 0 && l.mayContinue(a, st, e, flag) {
				from := l.at(l.k - int64(a.states[st].depth))
				if l.fam.bare && l.escStart-from < minTail {
					// A bare escape's prefix stands for nothing: only
					// the characters before it may be secret, and fewer
					// than minTail of them are released. Counted with
					// them, a line break made "a\r\n" after a long base64
					// line a tail of three, and a marker at the end of
					// the stream.
					return pos
				}
				return from
			}
		}
		if !l.fam.bare && l.mayContinue(a, 0, e, flag) {
			return l.escStart
		}
		return pos
	}
	f := pos
	if h := a.heldBy(l.state, flag); h > 0 {
		f = l.at(l.k - int64(h))
	}
	if l.escLen > 0 {
		f = min(f, l.escStart)
	}
	return f
}

// mayContinue reports whether e is the beginning of a spelling, by the
// lane's family, of the text that follows state st in a needle the lane
// reports (those whose prefixes carry flag). It reads the needles'
// characters as the skip filters do (family.slots): a byte for a family of
// byte slots, else a code point, and a byte that begins no valid UTF-8
// sequence as itself only. It runs at the end of a stream, on an escape
// that is still open: at most maxEscape bytes.
func (l *lane) mayContinue(a *automaton, st int32, e []byte, flag uint32) bool {
	if len(e) == 0 {
		return true
	}
	found := false
	a.children(st, func(b byte, v int32) bool {
		if a.states[v].info&flag == 0 {
			return true
		}
		if l.fam.byteSlots || b < utf8.RuneSelf {
			found = l.spelledBy(a, v, l.fam.spellings(string([]byte{b}), l.fam.byteSlots, rune(b)), e, flag)
		} else {
			// A byte of a multi-byte character, as itself (the
			// character's own spelling, a byte at a time), or the escapes
			// of the character it begins.
			found = e[0] == b && l.mayContinue(a, v, e[1:], flag) || l.mayContinueRune(a, v, []byte{b}, e, flag)
		}
		return !found
	})
	return found
}

// mayContinueRune is mayContinue for the escapes of a code point whose
// UTF-8 begins with seq, which leads to state st.
func (l *lane) mayContinueRune(a *automaton, st int32, seq, e []byte, flag uint32) bool {
	if utf8.FullRune(seq) {
		r, w := utf8.DecodeRune(seq)
		if w != len(seq) || r == utf8.RuneError && w == 1 {
			return false // not a character: its bytes are themselves only
		}
		return l.spelledBy(a, st, l.fam.spellings(string(seq), false, r)[1:], e, flag)
	}
	found := false
	a.children(st, func(b byte, v int32) bool {
		found = a.states[v].info&flag != 0 && l.mayContinueRune(a, v, append(seq[:len(seq):len(seq)], b), e, flag)
		return !found
	})
	return found
}

// spelledBy reports whether e begins with one of the spellings sp of a
// character that leads to state st, and what is left of e after it
// continues from st; or whether e is the beginning of one of them.
func (l *lane) spelledBy(a *automaton, st int32, sp []string, e []byte, flag uint32) bool {
	for _, w := range sp {
		if len(e) <= len(w) {
			if string(e) == w[:len(e)] {
				return true
			}
		} else if string(e[:len(w)]) == w && l.mayContinue(a, st, e[len(w):], flag) {
			return true
		}
	}
	return false
}

// pass brings every lane over p[from:q], which the skip passed with the
// raw scan at rest at from: no spelling of a needle begins there.
//
// A lane attached at from is brought to the decoder state a scan of every
// byte would have at q (resync). A detached lane is fed the bytes on its
// own (carry) until it may attach again, and resynced from there: its
// candidates began before from, in bytes the skip did not judge.
//
// While a lane was detached the raw scan used to stay on every byte with
// it: the adversarial bench's escaped cases ran at 26 to 51 MB/s of CPU
// time, and with the lanes carried at 56 to 122.
func (s *Stream) pass(p []byte, from, q int) {
	if q == from {
		return
	}
	// The lanes that an introducer near q may have left inside an escape
	// or a run; the others are at rest at q once at rest before. Those and
	// the detached lanes are all that need anything: visiting them alone
	// took 3 to 4% off the instructions of the adversarial bench.
	var open uint8
	for _, b := range p[max(from, q-maxEscape-1):q] {
		open |= s.r.intro[b]
	}
	for m := s.detachedSet | uint32(open); m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		l := &s.lanes[i]
		t := max(from, int(min(l.pos-s.curBase, int64(q))))
		if l.detached {
			t = s.carry(l, p, from, q, false)
			if l.detached && l.kind == laneEscape {
				s.runAhead(l, p, q)
			}
		}
		if t < q && open&(1<<i) != 0 {
			s.resync(l, p, t, q)
		}
	}
}

// carry feeds the detached lane l the bytes p[from:q] that the skip
// passed, and returns the index after which it attached, or q. The lane
// attaches when it is at rest and every candidate it follows began in
// p[from:q], where the skip refuted every start: they are doomed, and the
// lane is at the root of the raw scan the skip stands for. A lane that
// ran ahead is carried on from where it stopped.
//
// Along a straight path of the automaton the lane reads the raw bytes
// eight at a time (automaton.follow): they begin no escape, so they stand
// for themselves. A run of the whitespace family is passed whole, as feed
// would pass it a byte at a time (only its first byte counts): that took
// the adversarial bench's whitespace cases from about 130 to 150 MB/s of
// CPU time. A byte that stands for itself off a straight path goes to emit
// directly, and a run stands for its line break as soon as the byte after
// it shows that it ended, so that a straight path resumes at that byte:
// with the ring filled a run of positions at a time (along, detach), that
// took the adversarial bench's whitespace cases from about 110 to 123
// MB/s (12% fewer instructions), and 6% off the instructions of the
// escaped ones.
//
// With ahead set, the lane runs ahead instead (runAhead): it attaches at
// rest at the root, as stepLanes would attach it there, and only from
// its position on.
func (s *Stream) carry(l *lane, p []byte, from, q int, ahead bool) int {
	a := s.r.ac
	straight := a.straight
	passed := s.curBase + int64(from)
	t := max(from, int(l.pos-s.curBase))
	for t < q {
		b := p[t]
		switch run := l.fam.run; {
		case l.escLen == 0 && !l.inRun && !l.intro[b]:
			// b stands for itself, and so may the bytes after it.
			// (A state on a straight path has one edge: straight is 0
			// for the others, and nil without needles.)
			if int(l.state) < len(straight) && straight[l.state] != 0 {
				if m := a.follow(l.state, p[t:q], int(straight[l.state])); m > 0 {
					if l.rowN != 0 {
						l.flush()
					}
					l.along(m, s.curBase+int64(t))
					t += m
					continue
				}
			}
			l.emit(s, b, s.curBase+int64(t), s.curBase+int64(t)+1, false)
			t++
		case run != nil && run[b]:
			if !l.inRun {
				l.inRun, l.runStart = true, s.curBase+int64(t)
			}
			for t++; t < q && run[p[t]]; t++ {
			}
			if t == q {
				continue // the run may go on
			}
			// The run ends before p[t], which feed would read with it.
			l.inRun = false
			l.emit(s, l.fam.runAs, l.runStart, s.curBase+int64(t), true)
		default:
			if n := l.decodeAt(s, p[:q], t); n > 0 {
				t += n
			} else {
				l.feed(s, b, s.curBase+int64(t), true)
				t++
			}
			if l.escLen != 0 {
				continue
			}
		}
		if l.state == 0 || !ahead && l.at(l.k-int64(a.states[l.state].depth)) >= passed {
			l.state = 0
			l.detached = false
			s.detachedSet &^= 1 << l.index
			l.pos = s.curBase + int64(t)
			return t
		}
	}
	l.pos = s.curBase + int64(t)
	return q
}

// runAhead carries the detached escape lane l on its own from p[t], ahead
// of the raw scan, while it follows a candidate or is inside an escape,
// to where it attaches or to the end of p: the raw scan does not feed it
// the bytes it has read (stepLanes), and the skip carries it on from
// there (pass). So a lane reads an escaped secret whole, its escapes at
// once and its straight paths eight bytes at a time, where the raw scan,
// stopped at each of its escapes, used to feed it a byte at a time: the
// adversarial bench's backslash cases went from about 100 to 120 MB/s of
// CPU time, the entity ones from 115 to 130, the percent ones gained
// about 4%.
//
// The whitespace lane does not run ahead: it detaches at every space of
// a log, and running ahead it followed the words after them byte by
// byte (the adversarial bench's whitespace cases lost 10 to 30%).
func (s *Stream) runAhead(l *lane, p []byte, t int) {
	if l.escLen != 0 || l.state != 0 {
		s.carry(l, p, t, len(p), true)
	}
}

// decodeAt decodes at once the escape that the pending bytes and p[t:]
// spell, when p holds all of it, and returns how many bytes of p it took;
// 0 leaves the decoding to feed, byte by byte: at a byte that begins no
// escape, when the escape fails, or when p may cut it off. Fed a byte at a
// time, an escape of n bytes is parsed n times over, for each escape of
// the family it may still be (decode): reading it whole took the
// adversarial bench's entity near misses from 63 to 82 MB/s of CPU time,
// the backslash ones from 56 to 67 (percent escapes, three bytes long,
// gained nothing measurable).
func (l *lane) decodeAt(s *Stream, p []byte, t int) int {
	if l.escLen == 0 && (!l.intro[p[t]] || !l.opens(s, s.curBase+int64(t))) || l.fam.run != nil {
		return 0
	}
	var buf [maxEscape]byte
	k := l.escLen
	if k == 0 && t+maxEscape <= len(p) {
		buf = [maxEscape]byte(p[t : t+maxEscape])
	} else if copy(buf[copy(buf[:], l.esc[:k]):], p[t:]) < maxEscape-k {
		return 0
	}
	live := l.escLive
	if l.escLen == 0 {
		live = l.first[p[t]]
	}
	if k < 2 {
		live &= l.second[buf[1]]
	}
	var out [utf8.UTFMax]byte
	n, dec := l.fam.decodeWhole(&buf, live, out[:0])
	if n == 0 {
		return 0
	}
	start := s.curBase + int64(t)
	if l.escLen > 0 {
		start = l.escStart
	}
	end := s.curBase + int64(t+n-k)
	if l.fam.bare {
		start = end - 1
	}
	l.escLen = 0
	for _, c := range dec {
		l.emit(s, c, start, end, true)
	}
	return n - k
}

// along moves the lane m states down a straight path of the automaton,
// on the raw bytes from position j, which stand for themselves: what emit
// does for each, less the outputs, which a straight path has none of, and
// with their starts kept as the lane's row, which the caller has flushed.
// It is kept within the inliner's budget, as automaton.hit is.
func (l *lane) along(m int, j int64) {
	l.rowK, l.rowJ, l.rowN = l.k, j, int64(m)
	l.k += int64(m)
	l.since = min(l.since+int32(m), 1<<30) // m is below 256: no overflow
	l.state += int32(m)
}

// at returns the raw start of decoded byte k, one of the last len(ring).
func (l *lane) at(k int64) int64 {
	if uint64(k-l.rowK) < uint64(l.rowN) {
		return l.rowJ + (k - l.rowK)
	}
	return l.ring[k&int64(len(l.ring)-1)]
}

// flush writes the starts of the row into the ring, of those of its
// bytes that are among the last len(ring) (older ones are never read,
// and their slots may hold newer bytes).
func (l *lane) flush() {
	mask := int64(len(l.ring) - 1)
	t, end := max(l.rowK, l.k-mask-1), l.rowK+l.rowN
	for j := l.rowJ + (t - l.rowK); t < end; {
		// The ring's end splits the positions in two runs at most.
		r := l.ring[t&mask:]
		r = r[:min(int64(len(r)), end-t)]
		for i := range r {
			r[i] = j + int64(i)
		}
		t += int64(len(r))
		j += int64(len(r))
	}
	l.rowN = 0
}

// resync brings the lane l, attached and at rest at p[from], to the
// decoder state a scan of every byte would have at p[q].
func (s *Stream) resync(l *lane, p []byte, from, q int) {
	if run := l.fam.run; run != nil {
		// A family of runs decodes nothing else: the lane is in a run
		// at q when p[q-1] is of the class, and the run began where the
		// class did. Fed the bytes before q instead, the whitespace lane
		// cost the adversarial bench's whitespace cases 2 to 3% of
		// their instructions.
		t := q
		for t > from && run[p[t-1]] {
			t--
		}
		if t < q {
			l.inRun, l.runStart = true, s.curBase+int64(t)
			s.detach(l, 0, s.curBase+int64(q))
		}
		return
	}
	start := max(from, q-maxEscape-1)
	// A run of introducers (backslashes, quotes) pairs up from its
	// first byte: read it whole.
	for start > from && p[start-1] == p[start] && l.intro[p[start]] {
		start--
	}
	for t := start; t < q; t++ {
		l.feed(s, p[t], s.curBase+int64(t), false)
	}
	if l.escLen > 0 || l.inRun {
		s.detach(l, 0, s.curBase+int64(q))
	}
}
