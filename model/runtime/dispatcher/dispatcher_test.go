package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestClassifyError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want model.ErrKind
	}{
		{"attempt timeout fired", fmt.Errorf("Post: %w", context.DeadlineExceeded), model.ErrTimeout},
		{"read deadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), model.ErrTimeout},
		{"net.Error timeout", timeoutErr{}, model.ErrTimeout},
		{"nothing listens", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, model.ErrRefused},
		{"partner reset", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, model.ErrReset},
		{"partner closed", fmt.Errorf("Post: %w", io.EOF), model.ErrReset},
		{"anything else", errors.New("weird"), model.ErrReset},
	}
	for _, tc := range tests {
		if got := classifyError(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRetryAfterInDrillTime(t *testing.T) {
	wall := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	ds := &dispatcher{speed: 20, cfg: Config{Clock: Clock{Start: wall, Speed: 20}}}
	tests := []struct {
		name, in, want string
	}{
		{"absent", "", ""},
		{"delta-seconds on the wire are wall seconds: 5 is 100 drill seconds", "5", "100"},
		{"zero stays zero", "0", "0"},
		{"a date 2s of wall time ahead is 40 drill seconds", wall.Add(2 * time.Second).Format(time.RFC1123), "40"},
		{"garbage passes through for the policy to refuse", "soon", "soon"},
	}
	for _, tc := range tests {
		// RFC1123 writes UTC as "UTC"; HTTP dates say GMT.
		in := tc.in
		if len(in) > 4 && in[len(in)-3:] == "UTC" {
			in = in[:len(in)-3] + "GMT"
		}
		if got := ds.retryAfter(in, wall); got != tc.want {
			t.Errorf("%s: %q -> %q, want %q", tc.name, in, got, tc.want)
		}
	}
}

func TestClock(t *testing.T) {
	start := time.Unix(1000, 0)
	c := Clock{Start: start, Speed: 20}
	if got := c.At(start.Add(time.Second)); !got.Equal(start.Add(20 * time.Second)) {
		t.Errorf("one wall second at ×20 is %v of drill time", got.Sub(start))
	}
	if got := c.WallAt(start.Add(20 * time.Second)); !got.Equal(start.Add(time.Second)) {
		t.Errorf("WallAt: %v", got.Sub(start))
	}
	if c.Wall(10*time.Second) != 500*time.Millisecond || c.Drill(time.Second) != 20*time.Second {
		t.Errorf("Wall/Drill conversions are off")
	}
}
