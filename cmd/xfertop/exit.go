package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/session"
)

// Exit statuses: the one convention every command follows, documented in exitHelp and the README.
const (
	exitOK          = 0   // success
	exitFailure     = 1   // a runtime failure: I/O, the backend, a recording that cannot be created or written
	exitUsage       = 2   // the command line is wrong: flags, arguments, scenario, knobs, an input that is not there
	exitAlert       = 3   // a watchdog alert or a deadlock ended the run
	exitData        = 4   // an input file is not what it should be: a corrupt recording, a malformed trace, no events
	exitExport      = 5   // with --otlp-required: spans or metric points did not reach the OTLP collector
	exitInterrupted = 130 // SIGINT, SIGTERM or SIGHUP; what ran is reported and the recording closed
)

// exitHelp ends every command's help.
const exitHelp = `
Exit status:
  0    success
  1    runtime failure (I/O, the backend; a recording that cannot be created or written, e.g. a full disk)
  2    usage error (flags, arguments, scenario, knobs; an input file that does not exist or is a directory)
  3    a watchdog alert or a deadlock ended the run (the report says which)
  4    bad input data (a corrupt or unreadable recording, a malformed trace, an input without events,
       an input given twice)
  5    with --otlp-required: the OTLP export failed (spans or metric points did not reach the collector);
       without it a failed export is a warning on standard error and the status is that of the run
  130  interrupted (SIGINT, SIGTERM or SIGHUP): the report of what ran is printed and the recording closed
`

// exitError is an error that ends the command with a given status. Commands return errors; xfertop
// prints them and maps them to a status in one place (exitStatus).
type exitError struct {
	code int
	err  error
	// printed: the message is already on standard error (the flag package prints its own).
	printed bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a wrong command line (status 2).
func usageError(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// dataError is an input file whose contents are wrong (status 4).
func dataError(err error) error { return &exitError{code: exitData, err: err} }

// failure is a runtime failure (status 1).
func failure(err error) error { return &exitError{code: exitFailure, err: err} }

// alertError is a run ended by a watchdog alert or a deadlock (status 3).
func alertError(err error) error { return &exitError{code: exitAlert, err: err} }

// flagError is the flag package's parse error, already printed with the flags' usage (status 2).
// For -h it adds the exit statuses to the help and is no error.
func flagError(fs *flag.FlagSet, err error, stdout io.Writer) error {
	if errors.Is(err, flag.ErrHelp) {
		// Help asked for is the command's output, on stdout (`xfertop run --help | less`), for
		// every command alike; mistakes go to stderr.
		fs.SetOutput(stdout)
		fs.Usage()
		fmt.Fprint(stdout, exitHelp)
		return nil
	}
	// One line naming the flag as typed, not the whole usage.
	fmt.Fprintf(fs.Output(), "%s: %v (see %s --help)\n", fs.Name(), err, fs.Name())
	return &exitError{code: exitUsage, err: err, printed: true}
}

// parseFlags parses args without the flag package's own messages: flagError says what is wrong.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	return choiceError(fs, err)
}

// choiceFlag is a flag that may stand alone (as a boolean does) or take one of a few values.
type choiceFlag interface {
	flag.Value
	IsBoolFlag() bool
	Choices() string // the values it takes, for people
}

// choiceError rewrites the flag package's "invalid boolean value" for a choiceFlag, whose values
// are not booleans: `invalid value "foo" for --critical-path: give binding (or the flag alone) or hta`.
func choiceError(fs *flag.FlagSet, err error) error {
	const pre = "invalid boolean value "
	if err == nil || !strings.HasPrefix(err.Error(), pre) {
		return err
	}
	rest := strings.TrimPrefix(err.Error(), pre)
	var v string
	if _, e := fmt.Sscanf(rest, "%q", &v); e != nil {
		return err
	}
	name, _, ok := strings.Cut(strings.TrimPrefix(rest[len(strconv.Quote(v)):], " for -"), ":")
	if !ok {
		return err
	}
	f := fs.Lookup(name)
	if f == nil {
		return err
	}
	c, ok := f.Value.(choiceFlag)
	if !ok {
		return err
	}
	return fmt.Errorf("invalid value %q for --%s: give %s", v, name, c.Choices())
}

// exitStatus maps an error to the exit status: an exitError says it; errors of the packages below
// are classified by type; anything else is a runtime failure.
func exitStatus(err error) int {
	var xe *exitError
	var ce *session.ConfigError
	var co *recordings.CorruptionError
	var wd *engine.WatchdogError
	var dl *engine.DeadlockError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &xe):
		return xe.code
	case errors.As(err, &ce):
		return exitUsage
	case errors.As(err, &co), errors.Is(err, recordings.ErrNotRecording), errors.Is(err, recordings.ErrNewerVersion),
		errors.Is(err, session.ErrNoEvents):
		return exitData
	case errors.As(err, &wd), errors.As(err, &dl):
		return exitAlert
	}
	return exitFailure
}

// finish prints err, if any, as "xfertop CMD: message" and returns the exit status. A command
// interrupted by a signal (ctx done) exits 130 whatever it returned: it was asked to stop.
func finish(ctx context.Context, cmd string, err error, stderr io.Writer) int {
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "xfertop %s: %v\n", cmd, interruption(ctx))
		return exitInterrupted
	}
	var xe *exitError
	if err != nil && !(errors.As(err, &xe) && xe.printed) {
		fmt.Fprintf(stderr, "xfertop %s: %s%s\n", cmd, namesOf(ctx).say(err.Error()), salvageHint(cmd, err))
	}
	return exitStatus(err)
}

// interruptedError is the cause main cancels the context with when a signal arrives.
type interruptedError struct{ sig os.Signal }

func (e *interruptedError) Error() string {
	switch e.sig {
	case os.Interrupt:
		return "interrupted by SIGINT (Ctrl-C)"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	case syscall.SIGHUP:
		return "interrupted by SIGHUP (the terminal closed)"
	}
	return "interrupted by " + e.sig.String()
}

// interruption says why ctx is done: the signal when main saw one.
func interruption(ctx context.Context) error {
	var ie *interruptedError
	if cause := context.Cause(ctx); errors.As(cause, &ie) {
		return ie
	}
	return errors.New("interrupted")
}

// untilInterrupted runs f, a command that reads or writes files without watching a context, and
// returns at once when ctx is done: a signal stops it (its goroutine is left behind; the process
// is about to exit).
func untilInterrupted(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inputFile checks that path, named on the command line as what to read, is there and is not a
// directory or a pipe (all usage errors). Commands that take pipes copy them to files first
// (spoolPipes); the others read an input more than once, or write it.
func inputFile(path, what string) error {
	if isPipe(path) {
		return usageError("%s is a pipe (or standard input), not a regular file: this command reads %s more than once, so give a file (analyze, replay, convert and compare take a pipe)", pipeName(path), what)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageError("%s: no such file", path)
	case err != nil:
		return failure(err)
	case st.IsDir():
		return usageError("%s is a directory, not %s", path, what)
	}
	return nil
}

// readError classifies an error reading an input file: the operating system's errors (permission,
// I/O) are runtime failures; the rest are about the contents.
func readError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return failure(err)
	}
	return dataError(err)
}

// recordingError turns a session.RecordingError into the command's message: the flag, the file,
// the operating system's reason and what became of the run.
func recordingError(re *session.RecordingError) error {
	cause := errors.Unwrap(re)
	for next := errors.Unwrap(cause); next != nil; next = errors.Unwrap(cause) {
		cause = next
	}
	if re.Create {
		return failure(fmt.Errorf("--record %s: cannot create the recording: %v", re.Path, cause))
	}
	return failure(fmt.Errorf("--record %s: %v; the run was stopped at that point, and the recording keeps every chunk completed before it", re.Path, cause))
}

// humanDuration formats ns for a person, in a form --from accepts: 1.983s, 21.5ms, 1h2m3.5s.
func humanDuration(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}
