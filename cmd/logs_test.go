//go:build linux

package cmd

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"procmon/internal/wait"
)

// TestFollowChangesBoundsTheGuardian: a follow asks no guardian for its
// notices when custody is unverified, the output has ended or the window
// has lapsed, and gives one that is asked no longer than a re-check, nor
// past the moment its custody lapses: a guardian that cannot answer
// (stopped) never holds the follow. Each time it watches the monitor's
// directory instead.
func TestFollowChangesBoundsTheGuardian(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name    string
		custody wait.Custody
		asked   bool
		by      time.Time // the latest the guardian may be waited for
	}{
		{"unverified", wait.Custody{Unverified: true}, false, time.Time{}},
		{"output ended", wait.Custody{OutputEnded: true, Terminal: true}, false, time.Time{}},
		{"lapsed", wait.Custody{Lapses: now.Add(-time.Millisecond)}, false, time.Time{}},
		{"lapses soon", wait.Custody{Lapses: now.Add(300 * time.Millisecond)}, true, now.Add(300 * time.Millisecond)},
		{"lapses late", wait.Custody{Lapses: now.Add(time.Hour)}, true, now.Add(wait.DefaultRecheck)},
		{"no window known", wait.Custody{}, true, now.Add(wait.DefaultRecheck)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			asked := false
			var deadline time.Time
			target := wait.Target{
				Dir: t.TempDir(),
				Changes: func(ctx context.Context) (<-chan struct{}, io.Closer, error) {
					asked = true
					var ok bool
					if deadline, ok = ctx.Deadline(); !ok {
						t.Errorf("the guardian was asked with no deadline")
					}
					return nil, nil, errors.New("not answering")
				},
			}
			changes, err := followChanges(context.Background(), target, c.custody, now)
			if err != nil {
				t.Fatal(err)
			}
			defer changes.Close()
			if asked != c.asked {
				t.Fatalf("guardian asked: %v, want %v", asked, c.asked)
			}
			// Bounds count from now, while the deadline is set on the
			// real clock, which has moved on since.
			if c.asked && deadline.After(c.by.Add(time.Since(now))) {
				t.Errorf("the guardian may be waited for until %v, past %v", deadline.Sub(now), c.by.Sub(now))
			}
		})
	}
}
