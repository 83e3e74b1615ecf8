package main

import (
	"strings"
	"testing"
)

// No store password reaches the output, whether it is the URL's or a query
// parameter's, and the message around it stays intact.
func TestStorePasswordsNeverPrinted(t *testing.T) {
	for _, dsn := range []string{
		"postgres://127.0.0.1:1/db?password=hunter2&connect_timeout=2",
		"postgres://u:t@127.0.0.1:1/db?connect_timeout=2",
		"postgres://u:s3cr3t-pw@10.0.0.1:1/db?sslpassword=k3yp4ss",
		"mysql://u:hunter2@127.0.0.1/db",
	} {
		for _, args := range [][]string{
			{"dlq", "list", "--store", dsn},
			{"dlq", "replay", "--store", dsn, "--reason", "permanent"},
			{"dispatch", "--store", dsn, "--drill", "drills/live-restart.toml", "--partners", "http://127.0.0.1:1"},
		} {
			code, out, errOut := stormdrill(t, args...)
			all := out + errOut
			for _, secret := range []string{"hunter2", ":t@", "s3cr3t-pw", "k3yp4ss"} {
				if strings.Contains(all, secret) {
					t.Errorf("%q: output shows %q:\n%s", args, secret, all)
				}
			}
			if code == 0 {
				t.Errorf("%q: exit 0", args)
			}
			if strings.Contains(dsn, "127.0.0.1:1/") && !strings.Contains(errOut, "failed to connect") {
				t.Errorf("%q: the message lost its words: %s", args, errOut)
			}
		}
	}
}
