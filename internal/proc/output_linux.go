package proc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/redact"
	"procmon/internal/state"
)

// outputFilter is where captured bytes become storable bytes: the streaming
// redactor. Redact appends what is safe to release; Flush ends the stream.
type outputFilter interface {
	Redact(dst, p []byte) []byte
	Flush(dst []byte) []byte
	Held() int
}

// readChunk is the pipe read size: large reads keep the child from ever
// waiting on the guardian, and the buffer is the guardian's largest.
const readChunk = 256 << 10

// writebackChunk is how much log the copier writes before it asks the
// kernel to start writing it back, so the fsync before the receipt finds
// little left to do. That fsync still flushes the device's cache (about
// 100 ms after 256 MiB of output on this project's test machines), but
// the copier does not fsync as it goes, not even in the background: on
// btrfs an fsync holds the inode's lock, which a write needs, while it
// waits for the disk, so the copier would stop reading and the service
// stop writing.
const writebackChunk = 8 << 20

// pipeSize asks the kernel for a larger pipe so a burst never blocks the
// child while the guardian writes the log.
const pipeSize = 1 << 20

// outputCopier carries the child's stdout and stderr (one pipe, order
// kept) through the filter into output.log. It never stops reading: when
// the log cannot be written the bytes are counted as lost, and past the
// capture limit they are counted and dropped.
type outputCopier struct {
	pipe     *os.File
	writeEnd *os.File
	log      *os.File
	logFD    uintptr
	filter   outputFilter
	limit    int64 // < 0: none
	// store, when set, takes the output to store instead of the log (a
	// foreground command keeps its tail in memory).
	store   func(p []byte)
	changed func() // after each write to the log

	captured atomic.Int64
	logBytes atomic.Int64
	lost     atomic.Int64
	logErr   atomic.Pointer[string]
	// held is how many bytes of output the filter holds back after its
	// last write (they may begin a credential), for a ping to tell.
	held atomic.Int64

	// unsynced counts log bytes since writeback was last started; only
	// run touches it.
	unsynced int64
	// synced is how much of the log an fsync has made durable, its inode
	// with it; -1 until one has. syncMu is held through each fsync, so
	// that a sync waits for one under way and then finds nothing left.
	syncMu sync.Mutex
	synced atomic.Int64

	// times takes the log's time marks (see state.TimesName), made at the
	// first mark (off the start's path) by newTimes, and nil once they
	// could not be made or written; lastMark and lastMarkMs are the last
	// mark's time on the monotonic clock and as it shows it, and marks
	// their number. Only run touches them.
	times      io.WriteCloser
	newTimes   func() (io.WriteCloser, error)
	lastMark   time.Time
	lastMarkMs int64
	marks      int

	capOnce sync.Once
	capHit  chan struct{} // closed when capture passes limit
	done    chan struct{} // closed at the pipe's EOF, after the last write
}

// newOutputCopier creates the pipe; the log, the filter and the limit are
// set before run starts.
func newOutputCopier() (*outputCopier, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create output pipe: %w", err)
	}
	// Best effort: a smaller pipe only means more, smaller reads. The
	// descriptor is reached through SyscallConn so that it stays with the
	// runtime poller instead of parking a thread in read.
	if rc, err := r.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
	o := &outputCopier{
		pipe:     r,
		writeEnd: w,
		limit:    -1,
		capHit:   make(chan struct{}),
		done:     make(chan struct{}),
	}
	o.synced.Store(-1)
	return o, nil
}

// openLog opens the monitor's output log, made empty by the launcher.
func (o *outputCopier) openLog(dir *state.Dir, monitorID string) error {
	log, err := dir.OpenLogForAppend(monitorID)
	if err != nil {
		return fmt.Errorf("open output log: %w", err)
	}
	o.log, o.logFD = log, log.Fd()
	o.newTimes = func() (io.WriteCloser, error) { return dir.CreateTimes(monitorID) }
	return nil
}

// run copies until EOF. It owns the filter and the log's write offset.
func (o *outputCopier) run() {
	buf := make([]byte, readChunk)
	out := make([]byte, 0, readChunk+256)
	var kept int64
	for {
		n, err := o.pipe.Read(buf)
		if n > 0 {
			out = o.filter.Redact(out[:0], buf[:n])
			o.held.Store(int64(o.filter.Held()))
			kept = o.take(out, kept)
		}
		if err != nil {
			break
		}
	}
	o.take(o.filter.Flush(out[:0]), kept)
	o.held.Store(0)
	o.pipe.Close()
	close(o.done)
}

// take counts redacted output p as captured and writes what of it fits
// under the capture limit, kept bytes being stored or lost before it; it
// returns the new count, the limit once the cap is hit. The count and the
// limit are of redacted bytes, a credential counting as its marker:
// counted before redaction, they told how long a redacted secret was (the
// captured count, and where the cap cut the text). Past the limit the
// output is still redacted, to be counted, while the drain stops the
// service.
func (o *outputCopier) take(p []byte, kept int64) int64 {
	o.captured.Add(int64(len(p)))
	next := kept + int64(len(p))
	if o.limit >= 0 && next > o.limit {
		n := max(o.limit-kept, 0)
		// A cut inside a marker would store a fragment such as "[REDA",
		// which reads as no marker: the cut goes before it, a few bytes
		// under the limit. The filter writes each marker whole into one
		// p, so a marker the cut splits is in p[lo:hi].
		lo := max(n-int64(len(redact.Marker))+1, 0)
		hi := min(n+int64(len(redact.Marker))-1, int64(len(p)))
		if i := bytes.Index(p[lo:hi], []byte(redact.Marker)); i >= 0 {
			n = lo + int64(i)
		}
		p = p[:n]
		// The stored output ends at the cut: kept counts up to the limit,
		// so no later bytes fill what the marker left free.
		next = o.limit
		o.capOnce.Do(func() { close(o.capHit) })
	}
	if o.store != nil {
		o.store(p)
	} else {
		o.write(p)
	}
	return next
}

// write appends to the log. After the first failure nothing more is
// written, so the log stays an exact prefix of the redacted stream; the
// rest is counted as lost.
func (o *outputCopier) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if o.logErr.Load() != nil {
		o.lost.Add(int64(len(p)))
		return
	}
	o.mark(o.logBytes.Load())
	n, err := o.log.Write(p)
	written := o.logBytes.Add(int64(n))
	if o.unsynced += int64(n); o.unsynced >= writebackChunk {
		// Start writeback of what was just written without waiting for it.
		unix.SyncFileRange(int(o.logFD), written-o.unsynced, o.unsynced, unix.SYNC_FILE_RANGE_WRITE)
		o.unsynced = 0
	}
	if err != nil {
		// An fsync that failed since the test above (settle's, or the
		// drain's) keeps its error: it came first.
		msg := err.Error()
		o.logErr.CompareAndSwap(nil, &msg)
		o.lost.Add(int64(len(p) - n))
	}
	if n > 0 && o.changed != nil {
		o.changed()
	}
}

// mark adds a time mark for output stored from offset on, unless the
// last was less than a second ago by both clocks. The mark shows the wall
// clock. Counted on it alone, a step back of an hour wrote no mark for an
// hour; counted on the monotonic clock alone, output in the second after
// a step forward (or a resume from suspend, which the monotonic clock
// does not count) was marked with the time before it, and logs --since
// a time in that second left it out.
func (o *outputCopier) mark(offset int64) {
	if o.marks == 0 && o.times == nil && o.newTimes != nil {
		// The marks are an index: a monitor runs without them.
		o.times, _ = o.newTimes()
		o.newTimes = nil
	}
	if o.times == nil {
		return
	}
	now, nowWall := time.Now(), nowMs()
	if o.marks > 0 && now.Sub(o.lastMark) < time.Second && nowWall-o.lastMarkMs < 1000 {
		return
	}
	if o.marks >= state.MaxTimeMarks {
		o.times.Close()
		o.times = nil
		return
	}
	if _, err := o.times.Write(state.AppendTimeMark(nil, nowWall, offset)); err != nil {
		// A mark cut short ends the marks; later times read as the last
		// whole one (more output, never less).
		o.times.Close()
		o.times = nil
		return
	}
	o.lastMark, o.lastMarkMs = now, nowWall
	o.marks++
}

// snapshot copies the counters into a record.
func (o *outputCopier) snapshot(m *state.Monitor) {
	m.CapturedBytes = o.captured.Load()
	m.LogBytes = o.logBytes.Load()
	m.LogBytesLost = o.lost.Load()
	if e := o.logErr.Load(); e != nil {
		m.LogError = *e
	}
}

// sync makes the log durable as far as it is written, unless an fsync
// already has. The guardian calls it once while custody goes on (see
// settle), so that the fsync before the receipt has nothing left to
// do for a service that has been quiet since: that fsync took 0.3 ms of
// a cancel on an idle disk in a trace, up to 5 ms on a busy one; without
// it a cancel of sleep took 9.5 ms instead of 9.9 (medians of 41,
// interleaved, load 2.4). It calls it again as a drain begins, while
// the group stops, for a service cancelled before settle (finish).
// A failed fsync is kept as the log's error for good: the kernel may
// have dropped the pages it could not write, and a later fsync would
// succeed all the same.
func (o *outputCopier) sync() {
	o.syncMu.Lock()
	defer o.syncMu.Unlock()
	n := o.logBytes.Load()
	if n == o.synced.Load() {
		return
	}
	if err := o.log.Sync(); err != nil {
		msg := "fsync: " + err.Error()
		o.logErr.CompareAndSwap(nil, &msg)
		return
	}
	if o.logErr.Load() == nil {
		o.synced.Store(n)
	}
}

// finish makes the log durable before the receipt is written.
func (o *outputCopier) finish(drained bool) {
	o.sync()
	if drained {
		o.log.Close()
		if o.times != nil {
			o.times.Close()
		}
	}
}

// abandon releases everything when the child never started.
func (o *outputCopier) abandon() {
	o.pipe.Close()
	if o.writeEnd != nil {
		o.writeEnd.Close()
	}
	if o.log != nil {
		o.log.Close()
	}
	if o.times != nil {
		o.times.Close()
	}
}
