package proc

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// GuardianArg is the hidden subcommand that runs a guardian.
const GuardianArg = "__guardian"

// PendingGuardian is a guardian process started before its spec is known,
// so that it boots while the caller does admission and takes the command
// slot. It does nothing until the spec arrives.
type PendingGuardian struct {
	p     *os.Process
	specW *os.File
	handR *os.File
	done  bool
}

// StartGuardian starts a detached guardian that waits for its spec. The
// guardian runs in its own session with no tie to the caller's stdio, so
// the caller may exit or be killed without touching the service.
func StartGuardian() (*PendingGuardian, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create spec pipe: %w", err)
	}
	defer specR.Close()
	handR, handW, err := os.Pipe()
	if err != nil {
		specW.Close()
		return nil, fmt.Errorf("create handoff pipe: %w", err)
	}
	defer handW.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		specW.Close()
		handR.Close()
		return nil, err
	}
	defer devnull.Close()
	p, err := os.StartProcess(exe, []string{"procmon", GuardianArg}, &os.ProcAttr{
		Dir: "/",
		// One P is plenty for a guardian and keeps its memory small.
		Env:   []string{"GOMAXPROCS=1"},
		Files: []*os.File{specR, handW, devnull},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		specW.Close()
		handR.Close()
		return nil, fmt.Errorf("start guardian: %w", err)
	}
	return &PendingGuardian{p: p, specW: specW, handR: handR}, nil
}

// Abandon sends no spec: the guardian exits without having done anything,
// and Abandon waits for it, so a refused start leaves no guardian behind.
// After Handoff it does nothing.
func (pg *PendingGuardian) Abandon() {
	if pg.done {
		return
	}
	pg.done = true
	pg.specW.Close()
	pg.handR.Close()
	pg.p.Wait()
}

// Handoff sends the spec and returns once the guardian has durably
// recorded the running handoff, or with the error that stopped it
// (exec_failed, nonreaping_unavailable, ...).
func (pg *PendingGuardian) Handoff(spec Spec) (*state.Monitor, error) {
	pg.done = true
	defer pg.handR.Close()
	err := json.NewEncoder(pg.specW).Encode(spec)
	pg.specW.Close()
	if err != nil {
		pg.p.Wait()
		return nil, fmt.Errorf("send spec to guardian: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(pg.handR, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read guardian handoff: %w", err)
	}
	var h handoff
	if len(data) > 0 {
		if err := json.Unmarshal(data, &h); err != nil {
			h.Error = &protocol.ErrorBody{Code: protocol.CodeInternal, Message: "decode guardian handoff: " + err.Error()}
		}
	}
	if h.Monitor == nil {
		// No running handoff: the guardian is exiting. Wait for it, so a
		// failed start provably leaves no guardian behind.
		pg.p.Wait()
		if h.Error == nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "guardian exited before the running handoff; see %s/guardian.log", state.MonitorPath(spec.StateDir, spec.MonitorID))
		}
		return nil, &protocol.Error{Code: h.Error.Code, Message: h.Error.Message, Details: h.Error.Details}
	}
	// The guardian outlives this process; it is never waited for.
	pg.p.Release()
	return h.Monitor, nil
}
