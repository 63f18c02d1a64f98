// Package redact owns the redaction of credentials from a byte stream: it
// rewrites the output of a supervised service so that neither the secrets the
// service was started with nor well-known token formats reach storage.
//
// It never stores, logs or prints a secret: errors name a secret by its index,
// and the package does no I/O of its own. Callers feed bytes in and get the
// redacted bytes back.
//
// Every redacted span is replaced by [Marker]; overlapping and adjacent spans
// collapse into one marker, and the marker carries no length information.
//
// # What is redacted
//
// Each registered secret is searched for in every representation that [Forms]
// lists: as is, and escaped as JSON (Go's and Python's), Go, Python's repr
// (of a string and of bytes), URL query and path (as Go, Python, curl and
// JavaScript's encodeURIComponent write them), a shell's single quotes
// (set -x, shlex.quote) and bash's $'...' (printf %q of a string with a
// character it cannot print: octal bytes in the C locale), XML and base64
// (std and url, at each of the three alignments inside a longer blob, of
// the secret and of its JSON forms: a JSON document base64-encoded); a
// multi-line secret also line by line and with its line breaks
// rewritten. All of these, for all secrets, are needles of one
// Aho-Corasick automaton whose state carries across writes.
//
// A program may escape any subset of a secret's characters, and libraries
// differ in which they choose, so a list of each library's output cannot
// be complete. The forms of a secret are also found in any
// spelling of an escaping family (family.go): each character as itself or
// as any escape of the family that stands for it. The families are those
// by which programs put a string into their output, and so into a log:
//
//   - backslash escapes, of structured logs and debug printing: JSON and
//     JavaScript (\uXXXX in either case,
//     surrogate pairs, \/ and the short escapes; Go's HTML-safe \u0026
//     \u003c \u003e and Python's ensure_ascii are \uXXXX), Go's
//     strconv.Quote and QuoteToASCII and Python's repr (\xXX, \UXXXXXXXX),
//     and a backslash before punctuation that stands for itself (Perl's
//     \$ and \@, Java properties' \= and \:, bash's printf %q);
//   - percent-encoding, of every logged URL and form body, in query form ('+' for a space) and path form
//     ('+' as itself), any character, either hex case;
//   - HTML and XML character references, of rendered pages, templates and
//     XML payloads: &amp; &lt; &gt; &quot; &apos;,
//     decimal and hex, with up to two leading zeros (PHP writes &#039;)
//     and any case of x and digits;
//   - whitespace: any run of it where a multi-line secret breaks a line, as
//     when a key or certificate is reindented or rejoined, or where a
//     secret has a space, as when a YAML writer or textwrap folds a
//     passphrase across lines. So a line that ends in a secret's first
//     line, or in a passphrase's first words, is held back with its line
//     break until the next byte comes (and is a held tail at the end of
//     the stream). The run is read in the text as printed: inside
//     another escaping (JSON's "\t\t", a URL's %0A%0A) a line break or
//     space is found only as one of the forms writes it (see lineJoins),
//     and a line shorter than MinSecretLen joined by a longer run there
//     is not;
//   - a doubled quote, of SQL literals, YAML's single-quoted scalars and
//     CSV fields (a quote inside is written twice), for a secret that
//     holds a quote;
//   - wrapped base64: a line break inside base64 text stands for
//     nothing. Base64 is wrapped at 76 characters (base64, MIME) or 64
//     (openssl, PEM), so a base64 form in a longer blob may cross a line.
//     A break counts only after 64 base64 characters in a row, so that a
//     line is held back at its end (its line break, and what may begin a
//     form before it, until the next byte) only when it ends in 64 such
//     characters: a base64 line, or a digest or separator line that long.
//
// Each family is a lane of the stream that decodes its escapes and feeds
// what they stand for to the same automaton, so this is still one pass
// with one automaton (lane.go). A family is one table; adding one adds a
// lane, which costs nothing while the text has none of its escapes.
// Every form of [Forms] is a needle of every lane (a base64 form, of the
// percent lanes and the wrap lane, which reports base64 forms only, and
// of the others when it holds a '+', '/', '-' or '_', the characters of
// base64 that writers escape), so an
// escaping nested in another (a JSON string percent-encoded or
// HTML-escaped, a URL's path-escaped password in Go's JSON, a base64 form
// in a URL query) or in itself (JSON in JSON, percent-encoding twice) is
// found when the inner escaping is one of [Forms]; a form glued to a broken
// escape before it (a lone backslash before \u0041) is read the way the
// broken escape reads it. Go writes \xXX for bytes that are not UTF-8,
// and Python's repr of bytes for every byte beyond ASCII, where Python's
// repr of a string writes a code point; the lanes read a code point, and
// the Go-quoted and bytes needles of [Forms] keep the bytes' reading.
//
// Independently of registration,
// format rules redact private-key PEM blocks (through the END line, or to
// the end of the stream), GitHub, AWS, Slack, Stripe,
// OpenAI and Anthropic tokens, and GitLab, npm, PyPI and Google API
// tokens beyond SPEC 8's list (not glued to a word before them: the ACCA
// of an upper-case hex digest, the sk-proj- of task-proj-; an AWS key id
// is exactly 20 characters), JWTs, the credential of an Authorization
// header (Bearer, Basic or Token, then a credential of MinSecretLen bytes
// or more, as a registered secret: not a word or a placeholder such as
// <token> or $TOKEN; written as a header, as a JSON key,
// escaped or not, as a form or query field, percent-encoded, or as Go
// prints an http.Header), and the password of a URL's userinfo, up to the
// authority's last '@' as URL parsers read it (also with
// its slashes JSON-escaped, or the whole URL percent-encoded inside a
// query or form body). Without secrets the
// automaton is the same in every process, so its tables are generated into
// the package (builtin_tables.go, by go generate) rather than built: [New]
// without secrets costs next to nothing.
//
// # Streaming invariant
//
// A [Stream] makes one pass over the data. For any input and any split of it
// into Redact calls (including one byte per call), the bytes returned by those
// calls followed by Flush are identical to [Redactor.String] of the whole
// input. To keep that promise a byte is released only once no credential can
// still start at or before it, given the bytes seen so far; everything later
// is held back. What is held is bounded by the longest needle and a fixed
// per-rule limit of 4 KiB, never by the size of the output or of a line.
//
// At the end of the stream, a held-back tail of three or more bytes that could
// still have become a credential (a prefix of a needle in any spelling, or a
// token begun after its rule's prefix) is replaced by the marker; a shorter
// tail is released as is. A prefix of a rule's trigger alone holds no secret
// and is released ("git" of github_pat_, the dashes of "-----END"), and so
// is what a URL rule held: no '@' can follow.
package redact
