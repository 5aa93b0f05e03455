package attach

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// EnvAttach names the address a rank's plugin sends to (and the console listens on, unless told).
const EnvAttach = "XFERTOP_ATTACH"

// DefaultSocket is the per-user Unix socket the console listens on and the plugin connects to when
// XFERTOP_ATTACH is not set: $XDG_RUNTIME_DIR/xfertop/attach.sock, else a directory of the
// user's own under the temporary directory.
func DefaultSocket() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "xfertop", "attach.sock")
	}
	return filepath.Join(os.TempDir(), "xfertop-"+strconv.Itoa(os.Getuid()), "attach.sock")
}

// Addr is where ranks connect: a Unix socket path, or a TCP host:port (only when asked for).
type Addr struct {
	Network string // unix or tcp
	Address string
}

// String is the address as users write it: a path, or tcp:host:port.
func (a Addr) String() string {
	if a.Network == "tcp" {
		return "tcp:" + a.Address
	}
	return a.Address
}

// Loopback reports whether only this machine can reach a: a Unix socket, or TCP on a loopback
// address (127.0.0.0/8, ::1, localhost).
func (a Addr) Loopback() bool {
	if a.Network != "tcp" {
		return true
	}
	host, _, err := net.SplitHostPort(a.Address)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ForRanks is the address ranks connect to when the console listens on a: a TCP address on every
// interface (0.0.0.0, ::) is no address to connect to, so it names this machine instead.
func (a Addr) ForRanks() Addr {
	if a.Network != "tcp" {
		return a
	}
	host, port, err := net.SplitHostPort(a.Address)
	if err != nil {
		return a
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			return Addr{"tcp", net.JoinHostPort(name, port)}
		}
	}
	return a
}

// ParseAddr reads an address: "" (the default socket), a path or unix:PATH, or tcp:HOST:PORT
// (a TCP address without a host listens on loopback only).
func ParseAddr(s string) (Addr, error) {
	switch {
	case s == "":
		return Addr{"unix", DefaultSocket()}, nil
	case strings.HasPrefix(s, "unix:"):
		if s[5:] == "" {
			return Addr{}, fmt.Errorf("address %q: give a socket path after the unix: prefix", s)
		}
		return Addr{"unix", s[5:]}, nil
	case strings.HasPrefix(s, "tcp:"):
		hp := s[4:]
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			return Addr{}, fmt.Errorf("address %q: want tcp:HOST:PORT: %w", s, err)
		}
		if host == "" {
			host = "127.0.0.1"
		}
		return Addr{"tcp", net.JoinHostPort(host, port)}, nil
	}
	return Addr{"unix", s}, nil
}

// Dial connects to a listening console, giving up after timeout.
func Dial(a Addr, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(a.Network, a.Address, timeout)
	if err != nil {
		return nil, fmt.Errorf("connect to xfertop at %s: %w", a, err)
	}
	return c, nil
}

// socketDir makes the default socket's directory (mode 0700) when missing. Any other path's
// directory must exist: a mistyped --socket would otherwise leave directories behind, and the
// ranks, given the same path, would wait on a socket nobody meant.
func socketDir(a Addr) error {
	dir := filepath.Dir(a.Address)
	if dir == filepath.Dir(DefaultSocket()) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("listen on %s: %w", a, err)
		}
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("listen on %s: directory %s does not exist: create it, or give --socket a path in an existing directory", a, dir)
	case err != nil:
		return fmt.Errorf("listen on %s: %w", a, err)
	case !st.IsDir():
		return fmt.Errorf("listen on %s: %s is not a directory", a, dir)
	}
	return nil
}

// Listen listens on a. The default socket's directory is created (mode 0700) when missing, a stale
// socket left by a console that died is replaced, and the socket is made private to the user
// (mode 0600) before any rank can connect.
func Listen(a Addr) (net.Listener, error) {
	if a.Network != "unix" {
		l, err := net.Listen(a.Network, a.Address)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", a, err)
		}
		return l, nil
	}
	if err := socketDir(a); err != nil {
		return nil, err
	}
	if st, err := os.Lstat(a.Address); err == nil {
		// Only a socket may be taken for one a dead console left: whatever else is at the path
		// (a file, a directory, a link) belongs to someone and is never removed.
		if st.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("listen on %s: %s is a %s, not a socket: give --socket a path that is free or holds a stale socket", a, a.Address, fileKind(st.Mode()))
		}
		if c, err := net.DialTimeout("unix", a.Address, 200*time.Millisecond); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: another xfertop attach is listening there (give --socket another path)", a)
		}
		if err := os.Remove(a.Address); err != nil {
			return nil, fmt.Errorf("listen on %s: remove the stale socket: %w", a, err)
		}
	}
	// The umask makes the socket private from its creation; Chmod states it.
	old := umask(0o177)
	l, err := net.Listen("unix", a.Address)
	umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", a, err)
	}
	if err := os.Chmod(a.Address, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("listen on %s: %w", a, err)
	}
	return l, nil
}

// fileKind names what a path holds, for an error that refuses to touch it.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeDevice != 0:
		return "device"
	case m.IsRegular():
		return "regular file"
	}
	return "file that is not a socket"
}

// removeSocket removes the socket a server listened on, and nothing else: if the path was replaced
// by something that is not a socket while the server ran, it stays.
func removeSocket(path string) error {
	if st, err := os.Lstat(path); err == nil && st.Mode().Type() != os.ModeSocket {
		return nil
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
