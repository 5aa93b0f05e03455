package ras

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// NCCL's RAS client protocol (src/ras/client_support.cc, spoken by its ncclras client): a text
// protocol of newline-ended commands on a TCP connection to NCCL_RAS_ADDR (localhost:28028 by
// default). The client says "CLIENT PROTOCOL 2" and the job answers "SERVER PROTOCOL n";
// "TIMEOUT <s>" and "SET FORMAT json" are answered "OK" (or "ERROR: …"); "STATUS" or "VERBOSE
// STATUS" is answered by the job's state, after which the job closes the connection; "MONITOR
// [lifecycle,trace,all]" is answered "OK", then by one notification per peer event for as long as
// the connection lasts (in JSON: an object per event).
const (
	// DefaultAddr is where NCCL's RAS listens unless NCCL_RAS_ADDR says otherwise.
	DefaultAddr = "localhost:28028"
	// ClientProtocol is the protocol version this client speaks (NCCL_RAS_CLIENT_PROTOCOL).
	ClientProtocol = 2
	// maxLine bounds a line of the protocol's handshake.
	maxLine = 4096
)

// ClientOptions tune a status query.
type ClientOptions struct {
	// CollTimeout, when positive, is sent as TIMEOUT: how long the job's RAS waits for its peers
	// (NCCL's default, 5 s, when 0).
	CollTimeout time.Duration
	// DialTimeout bounds connecting and each handshake answer (default 5 s).
	DialTimeout time.Duration
	// Dial connects to the job (a TCP dial when nil).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// ProtocolError is an answer of the job's RAS that is not the protocol's: what was sent, and what
// came back.
type ProtocolError struct {
	Addr, Sent, Got string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("NCCL RAS at %s: sent %q, got %q", e.Addr, e.Sent, e.Got)
}

// conn is one connection to a job's RAS, past the handshake and the format.
type conn struct {
	c    net.Conn
	r    *bufio.Reader
	addr string
	wait time.Duration
}

func dial(ctx context.Context, addr string, opts ClientOptions) (*conn, error) {
	wait := opts.DialTimeout
	if wait <= 0 {
		wait = 5 * time.Second
	}
	dialFn := opts.Dial
	if dialFn == nil {
		d := net.Dialer{Timeout: wait}
		dialFn = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	c, err := dialFn(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("NCCL RAS at %s: %w (is the job running with RAS enabled, NCCL_RAS_ENABLE=1, on this address, NCCL_RAS_ADDR?)", addr, err)
	}
	cn := &conn{c: c, r: bufio.NewReaderSize(c, maxLine), addr: addr, wait: wait}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	got, err := cn.ask(fmt.Sprintf("CLIENT PROTOCOL %d", ClientProtocol))
	if err != nil {
		c.Close()
		return nil, err
	}
	if !strings.HasPrefix(strings.ToUpper(got), "SERVER PROTOCOL ") {
		c.Close()
		return nil, &ProtocolError{addr, "CLIENT PROTOCOL", got}
	}
	if opts.CollTimeout > 0 {
		if err := cn.ok("TIMEOUT " + strconv.Itoa(int((opts.CollTimeout+time.Second-1)/time.Second))); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := cn.ok("SET FORMAT json"); err != nil {
		c.Close()
		var pe *ProtocolError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%w: the job's NCCL writes no JSON (NCCL 2.28.7 or later does)", err)
		}
		return nil, err
	}
	return cn, nil
}

// ask sends a command and reads the one-line answer.
func (cn *conn) ask(cmd string) (string, error) {
	_ = cn.c.SetDeadline(time.Now().Add(cn.wait))
	defer cn.c.SetDeadline(time.Time{})
	if _, err := io.WriteString(cn.c, cmd+"\n"); err != nil {
		return "", fmt.Errorf("NCCL RAS at %s: sending %q: %w", cn.addr, cmd, err)
	}
	line, err := cn.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", &ProtocolError{cn.addr, cmd, string(line[:64]) + "… (a line longer than the protocol's)"}
		}
		return "", fmt.Errorf("NCCL RAS at %s: reading the answer to %q: %w", cn.addr, cmd, err)
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

func (cn *conn) ok(cmd string) error {
	got, err := cn.ask(cmd)
	if err != nil {
		return err
	}
	if !strings.EqualFold(got, "OK") {
		return &ProtocolError{cn.addr, cmd, got}
	}
	return nil
}

// Status asks a running job's RAS for its state, as `ncclras -v -f json` does, and reads the
// document it answers (at most MaxInputBytes).
func Status(ctx context.Context, addr string, opts ClientOptions) (*Doc, error) {
	cn, err := dial(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	defer cn.c.Close()
	stop := context.AfterFunc(ctx, func() { cn.c.Close() })
	defer stop()
	if _, err := io.WriteString(cn.c, "VERBOSE STATUS\n"); err != nil {
		return nil, fmt.Errorf("NCCL RAS at %s: sending VERBOSE STATUS: %w", addr, err)
	}
	// The job gathers its peers' state (up to its collective timeout, and a leg more) before it
	// answers; it closes the connection after the document.
	coll := opts.CollTimeout
	if coll <= 0 {
		coll = 5 * time.Second
	}
	_ = cn.c.SetReadDeadline(time.Now().Add(cn.wait + 2*coll))
	b, err := io.ReadAll(io.LimitReader(cn.r, MaxInputBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("NCCL RAS at %s: reading the status: %w", addr, err)
	}
	if len(b) > MaxInputBytes {
		return nil, fmt.Errorf("NCCL RAS at %s: a status of more than %d bytes", addr, MaxInputBytes)
	}
	return parseDoc(addr, b)
}

// parseDoc reads and checks one document (what a file holds, or a status answer).
func parseDoc(name string, b []byte) (*Doc, error) {
	if SniffText(b) {
		doc, err := parseText(name, b)
		if err != nil {
			return nil, err
		}
		if err := checkDoc(name, doc); err != nil {
			return nil, err
		}
		return doc, nil
	}
	var doc Doc
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		off := dec.InputOffset()
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.Is(err, io.ErrUnexpectedEOF):
			off = int64(len(b)) // cut: where it ends
		}
		return nil, fmt.Errorf("%s (byte %d): not ncclras JSON: %w", name, off, err)
	}
	if err := checkDoc(name, &doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// PeerEvent is one notification of RAS's monitor mode (NCCL 2.29 and later): a peer process
// joined (PEER_NEW), is being connected (PEER_CONNECTING), or is dead (PEER_DEAD).
type PeerEvent struct {
	Timestamp string `json:"timestamp"`
	Group     string `json:"group"`
	Event     string `json:"event"`
	Peer      struct {
		Host     string `json:"host"`
		Pid      int64  `json:"pid"`
		CudaDevs []int  `json:"cuda_devs"`
		Addr     string `json:"addr"`
	} `json:"peer"`
	Details string `json:"details"`
}

// ErrNoMonitor is a job whose NCCL has no monitor mode (before 2.29): it answers MONITOR with an
// error.
var ErrNoMonitor = errors.New("the job's NCCL has no RAS monitor mode (NCCL 2.29 or later has)")

// Monitor watches a running job's peers through RAS's monitor mode (lifecycle events) and hands
// each event to fn until ctx ends or the job closes the connection (nil then). A job without the
// mode is ErrNoMonitor.
func Monitor(ctx context.Context, addr string, opts ClientOptions, fn func(PeerEvent)) error {
	cn, err := dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer cn.c.Close()
	if err := cn.ok("MONITOR lifecycle"); err != nil {
		var pe *ProtocolError
		if errors.As(err, &pe) && strings.HasPrefix(strings.ToUpper(pe.Got), "ERROR") {
			return fmt.Errorf("NCCL RAS at %s: %w (%s)", addr, ErrNoMonitor, pe.Got)
		}
		return err
	}
	stop := context.AfterFunc(ctx, func() { cn.c.Close() })
	defer stop()
	dec := json.NewDecoder(io.LimitReader(cn.r, 1<<40)) // events are small; the stream lasts
	for {
		var ev PeerEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("NCCL RAS at %s: monitor (byte %d): %w", addr, dec.InputOffset(), err)
		}
		fn(ev)
	}
}

// QuoteMax is how many bytes of a peer's answer a warning or an event's label quotes: enough
// to recognise what answered (an HTTP server, another protocol), not the kilobytes a garbage peer may send.
const QuoteMax = 40

// ErrText is a poll's error for the user: an answer that is not NCCL RAS's is quoted only by
// its first bytes, with its length, and the greeting is said as it was sent.
func ErrText(err error) string {
	text := err.Error()
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		return text
	}
	sent := pe.Sent
	if sent == "CLIENT PROTOCOL" { // the greeting, named without its version
		sent = fmt.Sprintf("CLIENT PROTOCOL %d", ClientProtocol)
	}
	got := fmt.Sprintf("%q", pe.Got)
	if len(pe.Got) > QuoteMax {
		got = fmt.Sprintf("%q… (%d bytes: not NCCL RAS)", pe.Got[:QuoteMax], len(pe.Got))
	}
	short := fmt.Sprintf("NCCL RAS at %s: sent %q, got %s", pe.Addr, sent, got)
	return strings.Replace(text, pe.Error(), short, 1)
}
