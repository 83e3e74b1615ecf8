package fakepartner

import (
	"fmt"
	"net"
	"sync"
)

// ListenLoopback listens on a TCP loopback address ("127.0.0.1:0",
// "[::1]:8080", "localhost:0"). Any other host, including an empty one
// (all interfaces), is refused: fake partners never leave the machine.
func ListenLoopback(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %v", addr, err)
	}
	if host == "localhost" {
		host = "127.0.0.1" // not resolved: a hosts file could point it elsewhere
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listen address %q is not a loopback address; use 127.0.0.1 or ::1", addr)
	}
	return net.Listen("tcp", net.JoinHostPort(ip.String(), port))
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
