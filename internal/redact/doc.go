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
// lists: as is, and escaped as JSON, Go, URL query and path, XML and base64
// (std and url, at each of the three alignments inside a longer blob); a
// multi-line secret also line by line and with its line breaks rewritten.
// All of these, for all secrets, are needles of one Aho-Corasick automaton
// whose state carries across writes. Independently of registration,
// format rules redact private-key PEM blocks, GitHub, AWS, Slack, Stripe,
// OpenAI and Anthropic tokens, JWTs, the credential of an Authorization
// header, and the password of a URL's userinfo. Without secrets the
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
// still have become a credential (a prefix of a needle, of a rule's trigger or
// of a rule's partial token) is replaced by the marker; a shorter tail is
// released as is.
package redact
