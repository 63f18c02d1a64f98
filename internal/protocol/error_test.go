package protocol

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// TestWrapfKeepsWhatTheCauseSaid: an answer built on an error keeps its
// code, its details (a lock to find with fuser, a path to inspect) and
// its chain, so that advice on them still applies; a plain error wraps
// as internal.
func TestWrapfKeepsWhatTheCauseSaid(t *testing.T) {
	cause := Errorf(CodeInternal, "lock %s stayed locked: %w", "/s/lock", syscall.EAGAIN).With("lock", "/s/lock")
	inner := fmt.Errorf("save record: %w", cause)
	e := Wrapf(inner, "reconcile of m_x stopped it, but could not store its receipt: %w", inner).With("monitor_id", "m_x")
	if e.Code != CodeInternal || e.Details["lock"] != "/s/lock" || e.Details["monitor_id"] != "m_x" || !errors.Is(e, syscall.EAGAIN) {
		t.Errorf("Wrapf = %+v; want the cause's code, its lock detail and chain, and the new detail", e)
	}
	if _, ok := cause.Details["monitor_id"]; ok {
		t.Errorf("Wrapf's detail was set on the cause too: %v", cause.Details)
	}
	if want := "reconcile of m_x stopped it, but could not store its receipt: save record: lock /s/lock stayed locked: resource temporarily unavailable"; e.Message != want {
		t.Errorf("message %q, want %q", e.Message, want)
	}
	unsafe := Wrapf(Errorf(CodeStateUnsafe, "x is a link").With("path", "/s/x"), "start: %w", errors.New("y"))
	if unsafe.Code != CodeStateUnsafe || unsafe.Details["path"] != "/s/x" {
		t.Errorf("Wrapf of state_unsafe = %+v", unsafe)
	}
	if plain := Wrapf(syscall.ENOSPC, "write: %w", syscall.ENOSPC); plain.Code != CodeInternal || !errors.Is(plain, syscall.ENOSPC) {
		t.Errorf("Wrapf of a plain error = %+v", plain)
	}
}
