package queue

import (
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	for _, tt := range []struct{ dsn, want string }{
		{"postgres://u:t@127.0.0.1:5432/db?sslmode=disable", "postgres://u:xxxxx@127.0.0.1:5432/db?sslmode=disable"},
		{"postgres://127.0.0.1:1/db?password=hunter2", "postgres://127.0.0.1:1/db?password=xxxxx"},
		{"postgres://u@127.0.0.1/db?sslpassword=k3y&sslmode=require", "postgres://u@127.0.0.1/db?sslmode=require&sslpassword=xxxxx"},
		{"postgresql://u:p%40ss@localhost/db", "postgresql://u:xxxxx@localhost/db"},
		{"host=127.0.0.1 user=u password=hunter2 dbname=db", "host=127.0.0.1 user=u password=xxxxx dbname=db"},
		{"host=127.0.0.1 password='two words' dbname=db", "host=127.0.0.1 password=xxxxx dbname=db"},
		{"sqlite:out/queue.db", "sqlite:out/queue.db"},
		{"postgres://u@127.0.0.1/db", "postgres://u@127.0.0.1/db"},
	} {
		if got := RedactDSN(tt.dsn); got != tt.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
}

// A short password is hidden where it stands for a password, and nowhere
// else: the rest of the message stays readable.
func TestRedactMessageKeepsTheMessage(t *testing.T) {
	dsn := "postgres://u:t@127.0.0.1:1/db?password=t"
	msg := "queue: postgres " + dsn + ": failed to connect to `user=u database=db`: dial tcp 127.0.0.1:1: connect: connection refused (password=t)"
	got := RedactMessage(msg, dsn)
	want := "queue: postgres postgres://u:xxxxx@127.0.0.1:1/db?password=xxxxx: failed to connect to `user=u database=db`: dial tcp 127.0.0.1:1: connect: connection refused (password=xxxxx)"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	long := "postgres://u:correct-horse@127.0.0.1/db"
	if got := RedactMessage("auth failed for correct-horse", long); strings.Contains(got, "correct-horse") {
		t.Errorf("a long password quoted alone survived: %q", got)
	}
}

// FuzzRedact: whatever the DSN, its URL password never survives RedactDSN.
func FuzzRedact(f *testing.F) {
	f.Add("u", "hunter2", "db")
	f.Add("", "t", "x?password=y")
	f.Fuzz(func(t *testing.T, user, pw, rest string) {
		// Characters that end the userinfo make it no password at all.
		if len(pw) < 3 || strings.ContainsAny(user+pw, "/?#@") {
			return
		}
		dsn := "postgres://" + user + ":" + pw + "@127.0.0.1/" + rest
		got := RedactDSN(dsn)
		if strings.Contains(got, ":"+pw+"@") {
			t.Errorf("RedactDSN(%q) = %q keeps the password", dsn, got)
		}
	})
}
