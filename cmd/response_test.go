//go:build linux

package cmd

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"procmon/internal/protocol"
)

// The answer to start is encoded by hand; it must be what encoding/json
// writes for it, compact and with --pretty, whatever its fields hold.
func TestStartResponseMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	strs := []string{"", "m_0123456789abcdefghijklmn", "api <v2> & co", "é\u2028\x01", "bad \xff", `"q"\`}
	pick := func() string { return strs[r.IntN(len(strs))] }
	list := func() []string {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return []string{pick(), pick()}
	}
	for i := range 2000 {
		resp := &startResponse{
			MonitorID: pick(), RunID: pick(), Name: pick(), Status: pick(),
			CommandOrdinal: r.Int64N(100) - 50, PID: r.IntN(1 << 22), PGID: -r.IntN(3),
			Argv: list(), StartedAtMs: r.Int64(), OwnershipExpiresAtMs: -r.Int64(), Warnings: list(),
		}
		if r.IntN(2) == 0 {
			d := r.Int64()
			resp.WorkDeadlineMs = &d
		}
		for _, pretty := range []bool{false, true} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if pretty {
				enc.SetIndent("", "  ")
			}
			if err := enc.Encode(resp); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := protocol.WriteJSON(&got, resp, pretty); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("response %d (pretty %v):\n got %s\nwant %s", i, pretty, got.String(), want.String())
			}
		}
	}
}
