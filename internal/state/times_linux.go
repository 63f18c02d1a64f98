package state

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strconv"

	"golang.org/x/sys/unix"
)

// TimesName is a monitor's time marks: lines "MS OFFSET" saying that the
// stored stream from byte OFFSET on was written at MS (milliseconds since
// the Unix epoch) or later. The guardian adds one when it writes output
// at least a second after the last, so the log's bytes are placed in time
// to the second. The marks are an index, not a record: they are not
// synced (a crash may lose the last ones, and then a time finds an
// earlier mark: more output, never less), and they stop at MaxTimeMarks.
const TimesName = "output.times"

// MaxTimeMarks bounds a monitor's marks: a second apiece, about 28 hours
// of output written every second, in at most 4 MiB.
const MaxTimeMarks = 100_000

// maxTimesBytes is the most the marks can take: MaxTimeMarks lines of
// two int64 in decimal.
const maxTimesBytes = MaxTimeMarks * 41

// CreateTimes creates a monitor's time marks file for appending.
func (d *Dir) CreateTimes(id string) (io.WriteCloser, error) {
	if err := ValidMonitorID(id); err != nil {
		return nil, err
	}
	f, err := openFile(d.Path, d.MonitorDir(id), TimesName, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_EXCL, 0o600, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// AppendTimeMark appends the line of one mark to b.
func AppendTimeMark(b []byte, ms, offset int64) []byte {
	b = strconv.AppendInt(b, ms, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, offset, 10)
	return append(b, '\n')
}

// LogOffsetAt is where output written at ms or later begins in a
// monitor's stored stream, to the second, as its time marks place it. A
// mark is added whenever output is written a second or more after the
// last one, so the bytes after a mark, up to the next, were written in
// the second after it: output since ms begins at the first mark later
// than a second before ms, and may hold up to a second more than asked,
// never less. With every mark older, it is the last mark's offset (the
// caller knows from the log's last write whether anything is newer). ok
// is false when the monitor has no marks (an older procmon made it, or
// they could not be written); a line that is not a whole mark (a write
// cut short) ends them.
//
// size is the log's: the guardian marks an offset before it writes
// there, so no mark of its lies past the log's end. One that does was
// written by someone else, and ends the marks too: taken, it placed the
// output since ms past all of it, and --since showed nothing.
func (d *Dir) LogOffsetAt(id string, ms, size int64) (offset int64, ok bool, err error) {
	if err := ValidMonitorID(id); err != nil {
		return 0, false, err
	}
	f, err := openFile(d.Path, d.MonitorDir(id), TimesName, unix.O_RDONLY, 0, maxTimesBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxTimesBytes))
	for sc.Scan() {
		at, off, found := bytes.Cut(sc.Bytes(), []byte{' '})
		markMs, err1 := strconv.ParseInt(string(at), 10, 64)
		markOff, err2 := strconv.ParseInt(string(off), 10, 64)
		if !found || err1 != nil || err2 != nil || markOff < offset || markOff > size {
			break
		}
		if markMs > ms-1000 {
			return markOff, true, nil
		}
		offset = markOff
	}
	return offset, true, nil
}
