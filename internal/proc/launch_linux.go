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

// Launch starts a detached guardian for spec and returns once the guardian
// has durably recorded the running handoff, or with the error that stopped
// it (exec_failed, nonreaping_unavailable, ...). The guardian runs in its
// own session with no tie to the caller's stdio, so the caller may exit or
// be killed without touching the service.
func Launch(spec Spec) (*state.Monitor, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create spec pipe: %w", err)
	}
	defer specR.Close()
	defer specW.Close()
	handR, handW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create handoff pipe: %w", err)
	}
	defer handR.Close()
	defer handW.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()

	p, err := os.StartProcess(exe, []string{"procmon", GuardianArg, spec.MonitorID}, &os.ProcAttr{
		Dir: "/",
		// One P is plenty for a guardian and keeps its memory small.
		Env:   []string{"GOMAXPROCS=1"},
		Files: []*os.File{specR, handW, devnull},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return nil, fmt.Errorf("start guardian: %w", err)
	}
	specR.Close()
	handW.Close()

	if err := json.NewEncoder(specW).Encode(spec); err != nil {
		return nil, fmt.Errorf("send spec to guardian: %w", err)
	}
	specW.Close()

	data, err := io.ReadAll(io.LimitReader(handR, 1<<20))
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
		p.Wait()
		if h.Error == nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "guardian exited before the running handoff; see %s/guardian.log", state.MonitorPath(spec.StateDir, spec.MonitorID))
		}
		return nil, &protocol.Error{Code: h.Error.Code, Message: h.Error.Message, Details: h.Error.Details}
	}
	// The guardian outlives this process; it is never waited for.
	p.Release()
	return h.Monitor, nil
}
