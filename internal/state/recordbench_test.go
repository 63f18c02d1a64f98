package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"testing"
	"time"
)

// benchMonitor is a monitor record as a guardian writes it at its running
// handoff, and benchReceipt the one it ends with.
func benchMonitor(receipt bool) *Monitor {
	deadline, limit := int64(1796041821674), int64(1000000)
	m := &Monitor{
		MonitorID: "m_0k2v7x3q9d1c8b5n4m6z", RunID: "r_8f3k2m9x0q7w1e5r6t4y", Name: "web",
		Argv: []string{"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1"},
		Cwd:  "/home/user/src/project", CommandOrdinal: 3, BootID: "6b1d8a6e-5f0c-4c1e-9a51-3f9e2c7d4b10",
		PID: 412345, PGID: 412345, ChildStartTicks: 98765432, GuardianPID: 412340, GuardianStartTicks: 98765430,
		AdmittedAtMs: 1796041791674, StartedAtMs: 1796041791680, HeartbeatSeq: 12,
		OwnershipExpiresAtMs: 1796041821680, OwnerGraceMs: 30000, WorkDeadlineMs: &deadline, MaxOutputBytes: &limit,
		Phase: PhaseRunning, CapturedBytes: 18231, LogBytes: 18231,
	}
	if receipt {
		code, exited := 0, int64(1796041830001)
		m.Phase = PhaseTerminal
		m.Receipt = &Receipt{
			Status: StatusCancelled, Reason: "cancel", ExitCode: &code,
			Signals:            []SignalEvent{{Signal: "SIGTERM", AtMs: 1796041830000, Targets: 1}},
			GroupEmptyVerified: true, OutputDrained: true, Containment: ContainmentComplete,
			Custody: CustodyGuardian, ExitedAtMs: &exited, FinishedAtMs: 1796041830002,
		}
	}
	return m
}

func benchRun() *Run {
	s := ExampleSettings()
	return &Run{RunID: "r_8f3k2m9x0q7w1e5r6t4y", CreatedAtMs: 1796041791000, Policy: s, Tools: Tools,
		Owner: &Owner{PID: 41000, StartTicks: 98700000}}
}

// A record's encoding and decoding in a long-lived process (a guardian's
// heartbeat, a list of many monitors).
func BenchmarkRecord(b *testing.B) {
	for _, receipt := range []bool{false, true} {
		m := benchMonitor(receipt)
		name := fmt.Sprintf("receipt=%v", receipt)
		b.Run("monitor-encode-fast/"+name, func(b *testing.B) {
			for b.Loop() {
				appendGenerated(make([]byte, 0, 1024), m)
			}
		})
		b.Run("monitor-encode-json/"+name, func(b *testing.B) {
			for b.Loop() {
				json.Marshal(m)
			}
		})
		body, _ := json.Marshal(m)
		b.Run("monitor-decode-fast/"+name, func(b *testing.B) {
			for b.Loop() {
				if !decodeGenerated(body, &Monitor{}) {
					b.Fatal("not taken")
				}
			}
		})
		b.Run("monitor-decode-json/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, err := strictDecode(body, &Monitor{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	body := []byte(benchRunBody)
	b.Run("run-decode-fast", func(b *testing.B) {
		for b.Loop() {
			if !decodeGenerated(body, &Run{}) {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("run-decode-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := strictDecode(body, &Run{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	env, _ := encodeRecord("run", json.RawMessage(body))
	b.Run("envelope-parse-fast", func(b *testing.B) {
		for b.Loop() {
			decodeGenerated(env, &envelope{})
		}
	})
	b.Run("envelope-parse-json", func(b *testing.B) {
		for b.Loop() {
			var e envelope
			json.Unmarshal(env, &e)
		}
	})
}

// What each record operation costs the first time a fresh process does
// it, which is what a start or a piped status pays: each case runs in a
// process of its own (this test binary again), and the median of the
// runs is reported. PROCMON_COLD_RUNS sets the runs per case (default 0:
// skipped).
func TestColdRecordCost(t *testing.T) {
	if c := os.Getenv("PROCMON_COLD_CASE"); c != "" {
		fmt.Printf("cold=%d\n", coldCase(t, c).Nanoseconds())
		return
	}
	runs, _ := strconv.Atoi(os.Getenv("PROCMON_COLD_RUNS"))
	if runs == 0 {
		t.Skip("set PROCMON_COLD_RUNS to measure")
	}
	for _, c := range []string{"monitor-encode-fast", "monitor-encode-json", "monitor-decode-fast", "monitor-decode-json",
		"run-decode-fast", "run-decode-json", "envelope-parse-fast", "envelope-parse-json"} {
		var ns []int
		for range runs {
			cmd := exec.Command(os.Args[0], "-test.run=^TestColdRecordCost$")
			cmd.Env = append(os.Environ(), "PROCMON_COLD_CASE="+c)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
			_, v, _ := bytes.Cut(out, []byte("cold="))
			v, _, _ = bytes.Cut(v, []byte("\n"))
			n, err := strconv.Atoi(string(v))
			if err != nil {
				t.Fatalf("%s: %q", c, out)
			}
			ns = append(ns, n)
		}
		sort.Ints(ns)
		t.Logf("%-22s median %6.1f µs (p10 %6.1f, p90 %6.1f)", c, float64(ns[len(ns)/2])/1e3,
			float64(ns[len(ns)/10])/1e3, float64(ns[len(ns)*9/10])/1e3)
	}
}

func coldCase(t *testing.T, c string) time.Duration {
	// Nothing here touches encoding/json or the fast codec before the
	// clock starts.
	m := benchMonitor(false)
	monitorBody := []byte(benchMonitorBody)
	runBody := []byte(benchRunBody)
	env := []byte(`{"schema":1,"kind":"run","checksum":"0","body":` + benchRunBody + "}\n")
	start := time.Now()
	switch c {
	case "monitor-encode-fast":
		appendGenerated(make([]byte, 0, 1024), m)
	case "monitor-encode-json":
		json.Marshal(m)
	case "monitor-decode-fast":
		if !decodeGenerated(monitorBody, &Monitor{}) {
			t.Fatal("not taken")
		}
	case "monitor-decode-json":
		if _, err := strictDecode(monitorBody, &Monitor{}); err != nil {
			t.Fatal(err)
		}
	case "run-decode-fast":
		if !decodeGenerated(runBody, &Run{}) {
			t.Fatal("not taken")
		}
	case "run-decode-json":
		if _, err := strictDecode(runBody, &Run{}); err != nil {
			t.Fatal(err)
		}
	case "envelope-parse-fast":
		decodeGenerated(env, &envelope{})
	case "envelope-parse-json":
		var e envelope
		json.Unmarshal(env, &e)
	default:
		t.Fatalf("no case %s", c)
	}
	return time.Since(start)
}

// benchMonitorBody is benchMonitor(false) as json.Marshal writes it
// (TestBenchBodies).
const benchMonitorBody = `{"monitor_id":"m_0k2v7x3q9d1c8b5n4m6z","run_id":"r_8f3k2m9x0q7w1e5r6t4y","name":"web","argv":["python3","-m","http.server","8000","--bind","127.0.0.1"],"cwd":"/home/user/src/project","command_ordinal":3,"boot_id":"6b1d8a6e-5f0c-4c1e-9a51-3f9e2c7d4b10","pid":412345,"pgid":412345,"child_start_ticks":98765432,"guardian_pid":412340,"guardian_start_ticks":98765430,"admitted_at_ms":1796041791674,"started_at_ms":1796041791680,"heartbeat_seq":12,"ownership_expires_at_ms":1796041821680,"owner_grace_ms":30000,"work_deadline_ms":1796041821674,"max_output_bytes":1000000,"phase":"running","captured_bytes":18231,"log_bytes":18231}`

// benchRunBody is benchRun as json.Marshal writes it
// (TestBenchBodies).
const benchRunBody = `{"run_id":"r_8f3k2m9x0q7w1e5r6t4y","created_at_ms":1796041791000,"policy":{"sandbox":{"mode":"host","process_monitor":true,"work_duration":{"protocol":"forge-work-duration-v2","timeout_seconds":null},"monitor_owner_grace_seconds":30,"monitor_timeout_seconds":null,"max_output_bytes":1000000,"command_limit":20}},"tools":["start_process","wait_process","process_status","process_logs","cancel_process","execute_command"],"native_checkpoints":false,"owner":{"pid":41000,"start_ticks":98700000}}`

func TestBenchBodies(t *testing.T) {
	if data, _ := json.Marshal(benchRun()); string(data) != benchRunBody {
		t.Fatalf("benchRunBody is out of date: %s", data)
	}
	if data, _ := json.Marshal(benchMonitor(false)); string(data) != benchMonitorBody {
		t.Fatalf("benchMonitorBody is out of date: %s", data)
	}
}
