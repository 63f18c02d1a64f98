package proc

import (
	"sync"
	"time"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// RunEnded is what ending a run did.
type RunEnded struct {
	Run      *state.Run
	Monitors []EndedMonitor // the run's monitors with their receipts, as each came to rest
	Failed   []MonitorError // the monitors whose custody is unverified
}

// EndedMonitor is one monitor of an ended run, with its receipt.
type EndedMonitor struct {
	*Observation
	// Drained is true for a monitor the end drained, false for one that
	// had ended before the end came to it.
	Drained bool
}

// MonitorError is why one monitor of several could not be acted on.
type MonitorError struct {
	MonitorID string
	Err       error
}

// EndRun ends run id (at nowMs, unless it had ended): it refuses further
// starts from then on, and every monitor of the run is drained, reason
// run_ended. When it returns no monitor of the run is running, whatever
// was in flight: a start that took its slot before the end is waited for
// until it is a monitor, then drained with the rest (slots are taken
// under the run's lock, which the end is marked under, so none is taken
// after it). A foreground command (exec) sees the end itself and drains
// its command (see Exec); what one whose custodian died left running is
// stopped here, as list stops it (see SweepAbandoned).
func EndRun(dir *state.Dir, id string, nowMs int64) (*RunEnded, error) {
	run, err := dir.UpdateRun(id, func(r *state.Run) error {
		if r.EndedAtMs == nil {
			r.EndedAtMs, r.EndReason = &nowMs, "run_ended"
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ids, err := dir.MonitorIDs()
	if err != nil {
		return nil, err
	}
	ended := &RunEnded{Run: run}
	var mu sync.Mutex
	var wg sync.WaitGroup
	inFlightBound := time.Now().Add(30 * time.Second)
	for _, mid := range ids {
		m, err := dir.LoadMonitor(mid)
		inFlight := protocol.HasCode(err, protocol.CodeUnknownMonitor)
		if !inFlight && (err != nil || m.RunID != id) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if inFlight {
				o, err := AwaitStart(dir, mid, inFlightBound)
				if err == nil && (o == nil || o.Monitor.RunID != id) {
					return
				}
			}
			// Cancel, with a look between its observation and its drain
			// to tell what this end drains from what had ended before.
			o, err := Observe(dir, mid)
			drained := err == nil && !o.Terminal()
			if err == nil {
				o, err = CancelObserved(dir, o, DefaultDrainGraceMs, "run_ended")
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				ended.Failed = append(ended.Failed, MonitorError{mid, err})
				return
			}
			ended.Monitors = append(ended.Monitors, EndedMonitor{o, drained})
		}()
	}
	wg.Wait()
	return ended, nil
}
