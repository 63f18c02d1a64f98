// Package logsample generates the service log text that procmon's
// benchmarks feed the redactor and the guardian: timestamps, levels,
// words, URLs, base64 bodies and key=value pairs, with no credential in
// it. It exists only so that the redactor's benchmark and bench/writer
// measure the same text.
package logsample

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
)

var (
	words = []string{"request", "served", "connection", "closed", "user", "cache", "miss",
		"retrying", "upstream", "timeout", "worker", "started", "listening", "handler",
		"payload", "accepted", "status", "query", "took", "bytes", "session", "renewed",
		"shard", "replica", "flushed", "compaction", "scheduled", "queue", "drained"}
	levels = []string{"INFO", "DEBUG", "WARN", "ERROR"}
)

// Lines returns as many lines of exactly lineLen bytes (newline included)
// as fit in size bytes. The text is the same on every call; about one URL
// in every 300 bytes makes it harder for a redactor than plain prose.
func Lines(size, lineLen int) []byte {
	rng := rand.New(rand.NewPCG(2024, 5))
	buf := make([]byte, 0, size)
	line := make([]byte, 0, 2*lineLen)
	for len(buf)+lineLen <= size {
		line = fmt.Appendf(line[:0], "2024-05-%02dT%02d:%02d:%02d.%06dZ %-5s [%s-%d] pid=%d ",
			1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000000),
			levels[rng.IntN(len(levels))], words[rng.IntN(len(words))], rng.IntN(16), 1000+rng.IntN(60000))
		for len(line) < lineLen-1 {
			switch rng.IntN(7) {
			case 0:
				line = fmt.Appendf(line, "url=https://api.example.com/v1/items/%d?page=%d&sort=desc ", rng.IntN(100000), rng.IntN(50))
			case 1:
				blob := make([]byte, 12+rng.IntN(48))
				for i := range blob {
					blob[i] = byte(rng.IntN(256))
				}
				line = fmt.Appendf(line, "body=%s ", base64.StdEncoding.EncodeToString(blob))
			case 2:
				line = fmt.Appendf(line, "id=%08x-%04x latency=%dms status=%d ", rng.Uint32(), rng.IntN(1<<16), rng.IntN(900), 200+rng.IntN(4)*100)
			default:
				for k := 2 + rng.IntN(6); k > 0; k-- {
					line = append(line, words[rng.IntN(len(words))]...)
					line = append(line, ' ')
				}
			}
		}
		line = append(line[:lineLen-1], '\n')
		buf = append(buf, line...)
	}
	return buf
}
