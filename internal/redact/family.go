package redact

import (
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// An escaping family is how one kind of program rewrites characters: a
// table of escapes, each a way to spell a character, and optionally a class
// of bytes whose runs stand for one character (whitespace for a line
// break). A program may spell any subset of a secret's characters with the
// family's escapes and leave the rest as they are; the family's lane of the
// stream (see lane.go) decodes the escapes and runs the automaton over what
// they stand for, and the skip filters learn every spelling the decoder
// accepts from the same table (spellings). Adding a family is adding a
// table to families.

// unit says what the number of a numeric escape stands for.
type unit uint8

const (
	unitByte  unit = iota // one byte (percent-encoding)
	unitRune              // a code point, written as UTF-8
	unitUTF16             // a UTF-16 code unit; a high surrogate must be followed by \u and a low one
)

// escape is one way of spelling characters. A literal escape (base 0) is
// prefix and stands for out, or with ident, prefix and one byte of ident,
// which it stands for; a numeric one is prefix, min to max digits in base
// (either case for hex; with a variable count, at most zeros leading
// zeros) and term, and stands for the number.
type escape struct {
	prefix   string
	out      string
	ident    *[256]bool
	base     int
	min, max int
	zeros    int
	term     string
	unit     unit
}

// family is an escaping family; see the comment at the top of the file.
type family struct {
	name    string
	escapes []escape
	// run, when set, is a class of bytes a run of which (one or more)
	// stands for runAs.
	run   *[256]bool
	runAs byte
	// byteSlots: the family spells bytes, not characters (percent-encoding
	// writes each byte of a character's UTF-8 on its own).
	byteSlots bool
	// base64Only: the family rewrites nothing but base64 text, so its lane
	// reports the base64 forms alone.
	base64Only bool
	// after, when set, is a class that the afterLen bytes before an escape
	// must all be of for it to be one.
	after    *[256]bool
	afterLen int
	// bare: an escape's prefix stands for nothing, and what it stands for
	// comes from its last byte alone, which a redacted span then begins
	// at.
	bare bool
	// needed reports whether the lane is worth running for a set of
	// secrets: a family whose spellings every secret has always is.
	needed func(secrets []string) bool
}

// maxEscape bounds the length of one escape: a surrogate pair (\ud83d\udd11)
// is 12 bytes; numeric entities take up to 7 digits.
const maxEscape = 12

func hexEsc(prefix string, digits int, u unit) escape {
	return escape{prefix: prefix, base: 16, min: digits, max: digits, unit: u}
}

func lit(prefix, out string) escape { return escape{prefix: prefix, out: out} }

func always([]string) bool { return true }

// backslashFamily is the string escaping of JSON and JavaScript
// (\uXXXX, surrogate pairs, \/ and the short escapes; Go's HTML-safe
// \u0026 \u003c \u003e and Python's ensure_ascii are just \uXXXX), of Go
// (strconv.Quote and QuoteToASCII: \xXX, \UXXXXXXXX, \a \v) and of Python's
// repr (\xXX, \', \UXXXXXXXX). \xXX stands for a code point, as in Python:
// Go writes it only for bytes that are not UTF-8, whose Go-quoted form is a
// needle of its own (Forms). A backslash before punctuation stands for
// the punctuation (classIdentEscape).
var backslashFamily = family{
	name: "backslash",
	escapes: []escape{
		hexEsc(`\u`, 4, unitUTF16),
		hexEsc(`\U`, 8, unitRune),
		hexEsc(`\x`, 2, unitRune),
		lit(`\"`, `"`), lit(`\'`, `'`), lit(`\\`, `\`), lit(`\/`, `/`),
		lit(`\a`, "\a"), lit(`\b`, "\b"), lit(`\f`, "\f"), lit(`\n`, "\n"),
		lit(`\r`, "\r"), lit(`\t`, "\t"), lit(`\v`, "\v"),
		{prefix: `\`, ident: classIdentEscape},
	},
	needed: always,
}

// classIdentEscape is the punctuation that a backslash before it leaves
// as it is, in every language here and in the writers that escape it so:
// Perl's Data::Dumper (\$ \@), Java's Properties.store (\= \: \# \!),
// bash's printf %q and Python's re.escape. The quotes, the backslash and
// the slash are literal escapes of their own.
var classIdentEscape = class(" !#$%&()*+,-.:;<=>?@[]^_`{|}~")

// percentFamily is percent-encoding in query form, where '+' is a space
// (url.QueryEscape, Python's quote_plus, HTML forms); either hex case.
var percentFamily = family{
	name:      "percent",
	escapes:   []escape{hexEsc("%", 2, unitByte), lit("+", " ")},
	byteSlots: true,
	needed:    always,
}

// percentPathFamily is percent-encoding where '+' is itself
// (url.PathEscape, encodeURIComponent, Python's quote): a lane of its own
// only when a form of a secret holds a '+', the one character the two
// forms read differently (a '+' of the secret, a space of its query form,
// a base64 digit).
var percentPathFamily = family{
	name:      "percent-path",
	escapes:   []escape{hexEsc("%", 2, unitByte)},
	byteSlots: true,
	needed: func(secrets []string) bool {
		for _, s := range secrets {
			for _, f := range Forms(s) {
				if strings.Contains(f, "+") {
					return true
				}
			}
		}
		return false
	},
}

// entityFamily is HTML and XML character references: the five named ones
// every escaper uses, decimal (&#39;, and PHP's &#039;) and hex (&#x27;,
// &#x0027;, any case of x and of the digits), with up to two leading
// zeros: each more would add spellings to the filters for no writer known.
var entityFamily = family{
	name: "entity",
	escapes: []escape{
		{prefix: "&#x", base: 16, min: 1, max: 8, zeros: 2, term: ";", unit: unitRune},
		{prefix: "&#X", base: 16, min: 1, max: 8, zeros: 2, term: ";", unit: unitRune},
		{prefix: "&#", base: 10, min: 1, max: 9, zeros: 2, term: ";", unit: unitRune},
		lit("&amp;", "&"), lit("&lt;", "<"), lit("&gt;", ">"), lit("&quot;", `"`), lit("&apos;", "'"),
	},
	needed: always,
}

// whitespaceFamily reads any run of whitespace as one line break, for a
// multi-line secret printed with its lines rejoined (indented, with blank
// lines, CRLF, or two tabs), and for a secret with spaces folded across
// lines (a passphrase or a mnemonic that PyYAML folds at 80 columns with
// an indent, or textwrap wraps): its needle is the secret with each run
// of whitespace collapsed (collapse), matched in this lane only.
var whitespaceFamily = family{
	name:  "whitespace",
	run:   classSpace,
	runAs: '\n',
	needed: func(secrets []string) bool {
		for _, s := range secrets {
			if collapsedForm(s) != "" {
				return true
			}
		}
		return false
	},
}

// The quote families read a quote written twice inside a string that
// the same quote delimits: SQL literals, YAML's single-quoted scalars
// (which PyYAML writes for a value that begins with ! @ % & * or holds
// ": ") and CSV fields. Each writer doubles its delimiter only, so each
// quote is a family of its own: read as one, a secret holding two of
// the other quote side by side was read as holding one. Each is a lane
// only when a secret holds its quote.
var singleQuoteFamily = quoteFamily('\'')
var doubleQuoteFamily = quoteFamily('"')

func quoteFamily(q byte) family {
	return family{
		name:    "quote " + string(q),
		escapes: []escape{lit(string([]byte{q, q}), string(q))},
		needed: func(secrets []string) bool {
			for _, s := range secrets {
				if strings.IndexByte(s, q) >= 0 {
					return true
				}
			}
			return false
		},
	}
}

// wrapFamily reads a line break inside base64 text as nothing: base64 is
// wrapped at 76 characters a line (GNU base64, MIME, Python's
// encodebytes, Java's MIME encoder) or 64 (openssl, PEM), so a secret's
// base64 form inside a longer blob may cross a line break. A break counts
// only after 64 base64 characters in a row: read after any line, it held
// back the last characters of every line that might begin a base64 form,
// and the line break, until the next line came (a service that prints
// "listening on :8000" and waits would have shown "listening on :80").
// A line that ends in 64 such characters (a digest, a separator of
// dashes) is still held so. The break stands for nothing, so a form that begins on the next line
// is redacted from its first character, not from the break.
var wrapFamily = family{
	name:       "wrap",
	escapes:    []escape{{prefix: "\n", ident: classBase64}, {prefix: "\r\n", ident: classBase64}},
	byteSlots:  true,
	base64Only: true,
	after:      classBase64,
	afterLen:   64,
	bare:       true,
	needed:     always,
}

// classBase64 is the alphabet of base64 and base64url, with the padding.
var classBase64 = class("A-Za-z0-9+/=_-")

// families lists every family; the whitespace family comes first.
var families = []*family{&whitespaceFamily, &backslashFamily, &percentFamily, &percentPathFamily, &entityFamily, &singleQuoteFamily, &doubleQuoteFamily, &wrapFamily}

// collapse rewrites every run of whitespace in s as one '\n' and trims it.
func collapse(s string) string {
	var b strings.Builder
	inRun := false
	for i := 0; i < len(s); i++ {
		if classSpace[s[i]] {
			inRun = true
			continue
		}
		if inRun && b.Len() > 0 {
			b.WriteByte('\n')
		}
		inRun = false
		b.WriteByte(s[i])
	}
	return b.String()
}

// collapsedForm returns the needle of the whitespace lane for a secret: the
// secret collapsed, when it has whitespace between other characters (a
// line break, or a space of a passphrase) and is long enough; else "".
func collapsedForm(s string) string {
	if c := collapse(s); len(c) >= MinSecretLen && strings.Contains(c, "\n") {
		return c
	}
	return ""
}

// Decoding.

// escStatus is how far the pending bytes get through an escape.
type escStatus uint8

const (
	escFail escStatus = iota
	escPartial
	escDone
)

// hexDigits has the value of each hex digit, and 0xff for other bytes.
var hexDigits = func() (t [256]uint8) {
	for b := range t {
		t[b] = 0xff
		if v := digitVal(byte(b), 16); v >= 0 {
			t[b] = uint8(v)
		}
	}
	return t
}()

func digitVal(b byte, base int) int {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0')
	case base == 16 && b >= 'a' && b <= 'f':
		return int(b-'a') + 10
	case base == 16 && b >= 'A' && b <= 'F':
		return int(b-'A') + 10
	}
	return -1
}

// parse matches p, the bytes of a pending escape, against e. When done, it
// returns the value of a numeric escape (a literal one stands for e.out)
// and how many bytes of p the escape takes; the bytes after those do not
// matter. decodeWhole parses up to three escapes for each one it reads
// (after "&#", the entity family's decimal and two hex ones): reading
// digits by table, and appending only the value of the escape it picks,
// took 2.6% off the instructions of the adversarial bench's entity cases.
func (e *escape) parse(p []byte) (escStatus, int, int) {
	// Byte by byte: a prefix is one to six bytes, and comparing them as
	// strings called memequal.
	for k := 0; k < len(e.prefix); k++ {
		if k == len(p) {
			return escPartial, 0, 0
		}
		if p[k] != e.prefix[k] {
			return escFail, 0, 0
		}
	}
	if e.ident != nil {
		switch {
		case len(p) == len(e.prefix):
			return escPartial, 0, 0
		case e.ident[p[len(e.prefix)]]:
			return escDone, int(p[len(e.prefix)]), len(e.prefix) + 1
		}
		return escFail, 0, 0
	}
	if e.base == 0 {
		return escDone, 0, len(e.prefix)
	}
	rest := p[len(e.prefix):]
	v, d, base := 0, 0, e.base // value, digits
	for hi := min(len(rest), e.max); d < hi; d++ {
		x := int(hexDigits[rest[d]])
		if x >= base {
			break
		}
		v = v*base + x
	}
	if e.min != e.max {
		// Count the leading zeros, but the last digit, which is the value.
		z := 0
		for z < d-1 && rest[z] == '0' {
			z++
		}
		if z > e.zeros {
			return escFail, 0, 0
		}
	}
	rest = rest[d:]
	if e.term == "" {
		if d < e.max {
			if len(rest) > 0 {
				return escFail, 0, 0
			}
			return escPartial, 0, 0
		}
	} else {
		if len(rest) == 0 {
			return escPartial, 0, 0
		}
		if d < e.min || rest[0] != e.term[0] {
			return escFail, 0, 0
		}
		rest = rest[1:]
	}
	used := len(p) - len(rest)
	switch e.unit {
	case unitByte:
		return escDone, v, used
	case unitUTF16:
		if v >= 0xDC00 && v < 0xE000 {
			return escFail, 0, 0 // a low surrogate alone
		}
		if v >= 0xD800 && v < 0xDC00 {
			// The low half must follow: \u and four hex digits.
			lo := 0
			for k := 0; k < 6; k++ {
				if k == len(rest) {
					return escPartial, 0, 0
				}
				c := rest[k]
				switch {
				case k == 0 && c != '\\', k == 1 && c != 'u':
					return escFail, 0, 0
				case k >= 2:
					x := digitVal(c, 16)
					if x < 0 {
						return escFail, 0, 0
					}
					lo = lo*16 + x
				}
			}
			if lo < 0xDC00 || lo >= 0xE000 {
				return escFail, 0, 0
			}
			v = 0x10000 + (v-0xD800)<<10 + (lo - 0xDC00)
			used += 6
		}
	}
	if v > utf8.MaxRune || v >= 0xD800 && v < 0xE000 {
		return escFail, 0, 0
	}
	return escDone, v, used
}

// appendValue appends to out what e stands for, v being the value parse
// returned.
func (e *escape) appendValue(out []byte, v int) []byte {
	switch {
	case e.ident != nil:
		return append(out, byte(v))
	case e.base == 0:
		return append(out, e.out...)
	case e.unit == unitByte:
		return append(out, byte(v))
	}
	return utf8.AppendRune(out, rune(v))
}

// decode tries the escapes of f in the mask live on the pending bytes p:
// escDone with what they stand for as soon as one escape is complete,
// escPartial while one may still be, else escFail. It returns the escapes
// still alive.
func (f *family) decode(p []byte, out []byte, live uint32) (escStatus, []byte, uint32) {
	st := escFail
	for m := live; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		switch s, v, _ := f.escapes[i].parse(p); s {
		case escDone:
			return escDone, f.escapes[i].appendValue(out, v), live
		case escPartial:
			st = escPartial
		default:
			live &^= 1 << i
		}
	}
	return st, out, live
}

// decodeWhole reads the escape that p begins, of those in the mask live,
// as decode fed one byte at a time would: of the escapes complete within
// p, the shortest, and of two as short the first in the family. It
// returns the escape's length, 0 if none is complete, and out with what
// the escape stands for appended.
func (f *family) decodeWhole(p *[maxEscape]byte, live uint32, out []byte) (int, []byte) {
	n, best, val := 0, 0, 0
	for m := live; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		if st, v, w := f.escapes[i].parse(p[:]); st == escDone && (n == 0 || w < n) {
			n, best, val = w, i, v
		}
	}
	if n == 0 {
		return 0, out
	}
	return n, f.escapes[best].appendValue(out, val)
}

// starting returns the escapes of f that begin with b.
func (f *family) starting(b byte) uint32 {
	var m uint32
	for i, e := range f.escapes {
		if e.prefix[0] == b {
			m |= 1 << i
		}
	}
	return m
}

// introducers returns the bytes that may begin an escape or a run of f.
func (f *family) introducers() (c [256]bool) {
	for _, e := range f.escapes {
		c[e.prefix[0]] = true
	}
	if f.run != nil {
		c = *f.run
	}
	return c
}

// Spelling, for the skip filters: every byte string the decoder reads as a
// given character.

// slot is one character of a needle as a family may spell it: a list of
// spellings, or (run) one or more bytes of the run class.
type slot struct {
	spell []string
	run   bool
}

// slots splits the beginning of a needle into the family's slots: the
// first n, which is all the skip filters look at (a slot is one byte or
// more). cache keeps the spellings of characters seen before.
func (f *family) slots(needle string, n int, cache map[string][]string) []slot {
	var out []slot
	for i := 0; i < len(needle) && len(out) < n; {
		if f.run != nil {
			if needle[i] == f.runAs {
				out = append(out, slot{run: true})
			} else {
				out = append(out, slot{spell: []string{needle[i : i+1]}})
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(needle[i:])
		if f.byteSlots || r == utf8.RuneError && w == 1 {
			w = 1
		}
		ch := needle[i : i+w]
		sp, ok := cache[ch]
		if !ok {
			sp = f.spellings(ch, w == 1 && f.byteSlots, r)
			cache[ch] = sp
		}
		out = append(out, slot{spell: sp})
		i += w
	}
	return out
}

// spellings returns every way f spells the character ch (one byte when
// byteVal, else the rune r): itself, and each escape that stands for it.
func (f *family) spellings(ch string, byteVal bool, r rune) []string {
	out := []string{ch}
	for _, e := range f.escapes {
		if e.ident != nil {
			if len(ch) == 1 && e.ident[ch[0]] {
				out = append(out, e.prefix+ch)
			}
			continue
		}
		if e.base == 0 {
			if e.out == ch {
				out = append(out, e.prefix)
			}
			continue
		}
		var vals []int
		switch {
		case e.unit == unitByte && byteVal:
			vals = []int{int(ch[0])}
		case e.unit == unitByte, byteVal && ch[0] >= utf8.RuneSelf:
			continue
		case r == utf8.RuneError && len(ch) == 1:
			continue // not a character
		case e.unit == unitUTF16 && r >= 0x10000:
			hi, lo := 0xD800+int(r-0x10000)>>10, 0xDC00+int(r-0x10000)&0x3FF
			for _, h := range numerals(hi, &e) {
				for _, l := range numerals(lo, &e) {
					out = append(out, e.prefix+h+`\u`+l)
				}
			}
			continue
		default:
			vals = []int{int(r)}
		}
		for _, v := range vals {
			for _, d := range numerals(v, &e) {
				out = append(out, e.prefix+d+e.term)
			}
		}
	}
	return out
}

// numerals returns v in e's base with every digit count e allows and every
// case of its hex letters.
func numerals(v int, e *escape) []string {
	const digits = "0123456789abcdef"
	var s []byte
	for x := v; x > 0 || len(s) == 0; x /= e.base {
		s = append([]byte{digits[x%e.base]}, s...)
	}
	var out []string
	hi := e.max
	if e.min != e.max {
		hi = min(hi, len(s)+e.zeros)
	}
	for n := max(len(s), e.min); n <= hi; n++ {
		d := strings.Repeat("0", n-len(s)) + string(s)
		out = append(out, caseVariants(d)...)
	}
	return out
}

// caseVariants returns s with its letters in every combination of cases.
func caseVariants(s string) []string {
	out := []string{s}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'f' {
			continue
		}
		for _, v := range out[:len(out):len(out)] {
			b := []byte(v)
			b[i] -= 'a' - 'A'
			out = append(out, string(b))
		}
	}
	return out
}

// A gram is up to four bytes packed into a uint32, the first byte lowest,
// as automaton.hit reads them.

func packGram(w string) uint32 {
	var k uint32
	for i := len(w) - 1; i >= 0; i-- {
		k = k<<8 | uint32(w[i])
	}
	return k
}

// sortedSet sorts and deduplicates grams.
func sortedSet(g []uint32) []uint32 {
	slices.Sort(g)
	return slices.Compact(g)
}

// prefixesFrom returns the distinct grams of n bytes that begin a
// spelling of the slots from index i (the needle is long enough that every
// spelling has n bytes); inRun means that slot i is a run that has had a
// byte already, so it may end.
func prefixesFrom(slots []slot, i, n int, inRun bool, memo *gramMemo) []uint32 {
	if n == 0 {
		return []uint32{0}
	}
	if i == len(slots) {
		return nil
	}
	key := memo.key(i, 0, n, inRun)
	if v, ok := memo.get(key); ok {
		return v
	}
	var out []uint32
	sl := slots[i]
	if sl.run {
		if inRun {
			out = append(out, prefixesFrom(slots, i+1, n, false, memo)...)
		}
		for c := 0; c < 256; c++ {
			if classSpace[c] {
				for _, g := range prefixesFrom(slots, i, n-1, true, memo) {
					out = append(out, uint32(c)|g<<8)
				}
			}
		}
	} else {
		for _, w := range sl.spell {
			if len(w) >= n {
				out = append(out, packGram(w[:n]))
				continue
			}
			for _, g := range prefixesFrom(slots, i+1, n-len(w), false, memo) {
				out = append(out, packGram(w)|g<<(8*len(w)))
			}
		}
	}
	out = sortedSet(out)
	memo.put(key, out)
	return out
}

// gramsAt returns the distinct grams of n bytes that lie skip bytes into
// a spelling of the slots from index i (inRun as for prefixesFrom).
func gramsAt(slots []slot, i, skip, n int, inRun bool, memo *gramMemo) []uint32 {
	if skip == 0 {
		return prefixesFrom(slots, i, n, inRun, memo)
	}
	if i == len(slots) {
		return nil
	}
	key := memo.key(i, skip, n, inRun)
	if v, ok := memo.get(key); ok {
		return v
	}
	var out []uint32
	sl := slots[i]
	if sl.run {
		if inRun {
			out = append(out, gramsAt(slots, i+1, skip, n, false, memo)...)
		}
		out = append(out, gramsAt(slots, i, skip-1, n, true, memo)...)
	} else {
		for _, w := range sl.spell {
			switch {
			case skip >= len(w):
				out = append(out, gramsAt(slots, i+1, skip-len(w), n, false, memo)...)
			case len(w)-skip >= n:
				out = append(out, packGram(w[skip:skip+n]))
			default:
				t := w[skip:]
				for _, g := range prefixesFrom(slots, i+1, n-len(t), false, memo) {
					out = append(out, packGram(t)|g<<(8*len(t)))
				}
			}
		}
	}
	out = sortedSet(out)
	memo.put(key, out)
	return out
}

// gramMemo holds what prefixesFrom and gramsAt found for the slots of one
// needle, by slot index, bytes skipped, gram length and an open run: a
// table rather than a map, since compiling a secret looks it up some
// hundred times for each of its forms and lanes.
type gramMemo struct {
	known [gramMemoLen]bool
	grams [gramMemoLen][]uint32
}

// gramMemoLen covers slot indexes up to needleStride+2 (the slots end
// there), skips below needleStride, lengths up to 4 and the open run.
const gramMemoLen = (needleStride + 3) * needleStride * 5 * 2

func (m *gramMemo) key(i, skip, n int, inRun bool) int {
	k := ((i*needleStride+skip)*5 + n) * 2
	if inRun {
		k++
	}
	return k
}

func (m *gramMemo) get(k int) ([]uint32, bool) { return m.grams[k], m.known[k] }

func (m *gramMemo) put(k int, g []uint32) { m.known[k], m.grams[k] = true, g }

// reset forgets every entry, for the next needle.
func (m *gramMemo) reset() { m.known = [gramMemoLen]bool{} }

// spelledSet holds the spellings of the lanes' needles as the skip filters
// need them: their first four bytes, and (offset<<24 | 3-gram) for their
// 3-grams at offsets 0 to needleStride-1. A gram may be there more than
// once.
type spelledSet struct {
	prefixes []uint32
	strides  []uint32
}

// spelledGrams returns the first bytes of every spelling, by the lanes'
// families, of the needles the lanes report. The raw text of a needle is
// one of its spellings and is in the filters already; it may come again.
func spelledGrams(pats []pattern, lanes []laneSpec) spelledSet {
	var out spelledSet
	memo := new(gramMemo)
	caches := make([]map[string][]string, len(lanes))
	for i := range caches {
		caches[i] = map[string][]string{}
	}
	for _, p := range pats {
		for li, ls := range lanes {
			if !ls.reports(p) {
				continue
			}
			slots := ls.fam.slots(p.text, needleStride+2, caches[li])
			if ls.fam.bare && len(slots) > 0 {
				// A match that a bare escape begins begins after its
				// prefix, where the character stands as itself.
				slots[0].spell = slots[0].spell[:1]
			}
			memo.reset()
			out.prefixes = append(out.prefixes, prefixesFrom(slots, 0, 4, false, memo)...)
			for o := 0; o < needleStride; o++ {
				for _, g := range gramsAt(slots, 0, o, 3, false, memo) {
					out.strides = append(out.strides, uint32(o)<<24|g)
				}
			}
		}
	}
	// The grams are not made distinct: the filters take a gram twice as
	// they take it once, and sorting them was a sixth of New's
	// instructions (40 and 200 secrets).
	return out
}
