package fakepartner

import (
	"fmt"
	"net"
	"sync"
)

// TokenEnv is the environment variable a control token may come from, so
// that it need not appear on a command line (and so in ps).
const TokenEnv = "STORMDRILL_PARTNER_TOKEN"

// Bounds of a control token: long enough not to be guessed over the
// network, short enough for one header line.
const (
	MinTokenBytes = 16
	MaxTokenBytes = 256
)

// ListenLoopback listens on a TCP loopback address ("127.0.0.1:0",
// "[::1]:8080", "localhost:0"). Any other host, including an empty one
// (all interfaces), is refused: fake partners never leave the machine
// unless a token is given (see Listen).
func ListenLoopback(addr string) (net.Listener, error) { return Listen(addr, "") }

// Listen listens on addr. A loopback address is always allowed; any other
// (a non-loopback IP, a host name, an empty host or 0.0.0.0 for every
// interface) only with a control token, which the server then requires on
// its control and dead-letter endpoints. The address is checked before
// anything is bound (CheckListen).
func Listen(addr, token string) (net.Listener, error) {
	a, err := CheckListen(addr, token)
	if err != nil {
		return nil, err
	}
	return net.Listen("tcp", a)
}

// CheckListen checks addr and token as Listen does, without binding, and
// returns the address to bind ("localhost" becomes 127.0.0.1).
func CheckListen(addr, token string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %v", addr, err)
	}
	if token != "" {
		if err := CheckToken(token); err != nil {
			return "", err
		}
	}
	if host == "localhost" {
		host = "127.0.0.1" // not resolved: a hosts file could point it elsewhere
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return net.JoinHostPort(ip.String(), port), nil
	}
	if token == "" {
		return "", fmt.Errorf("listen address %q is not a loopback address: other machines could reach the control API; use 127.0.0.1 or ::1, or give a token (--token, or $%s) that the control and dead-letter endpoints will require", addr, TokenEnv)
	}
	return addr, nil
}

// CheckToken checks a control token: MinTokenBytes to MaxTokenBytes of
// printable ASCII without spaces (it travels in a header).
func CheckToken(token string) error {
	if len(token) < MinTokenBytes || len(token) > MaxTokenBytes {
		return fmt.Errorf("the token must be %d to %d characters long (got %d); e.g. openssl rand -hex 16", MinTokenBytes, MaxTokenBytes, len(token))
	}
	for _, c := range []byte(token) {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("the token must be printable ASCII without spaces")
		}
	}
	return nil
}

// limitListener accepts at most n connections at a time; Accept waits for a
// slot. Its connections keep SetLinger, which the reset outage needs.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// SetLinger passes through to the TCP connection, so a reset can be forced.
func (c *limitConn) SetLinger(sec int) error {
	if l, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		return l.SetLinger(sec)
	}
	return nil
}
