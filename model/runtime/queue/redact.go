package queue

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// redacted stands in for a secret in messages.
const redacted = "xxxxx"

// isSecretParam reports whether a DSN query parameter or keyword carries a
// secret (password, sslpassword, ...).
func isSecretParam(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "pass") || strings.Contains(n, "secret") || strings.Contains(n, "token")
}

// keywordSecret matches a secret in the keyword/value form of a DSN
// ("host=h password=s" or password='s p').
var keywordSecret = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b([a-z_]*(?:pass|secret|token)[a-z_]*\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)`)
})

// RedactDSN returns dsn with every secret replaced: the URL's password and
// every query parameter whose name says it is one (password, sslpassword),
// or the same keywords of the keyword/value form. The rest is kept, so the
// message still says which store was meant.
func RedactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" || (u.Opaque != "" && u.Host == "" && strings.Contains(u.Opaque, "=")) {
		// Not a URL net/url reads: hide a "scheme://user:secret@" by hand,
		// then any keyword secrets.
		return keywordSecret().ReplaceAllString(redactUserinfo(dsn), "${1}"+redacted)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = keywordSecret().ReplaceAllString(u.RawQuery, "${1}"+redacted)
		} else {
			changed := false
			for k, vs := range q {
				if isSecretParam(k) {
					for i := range vs {
						vs[i] = redacted
					}
					changed = true
				}
			}
			if changed {
				u.RawQuery = q.Encode()
			}
		}
	}
	return u.String()
}

// redactUserinfo hides the password of "scheme://user:secret@host..." in
// text that net/url refuses.
func redactUserinfo(dsn string) string {
	_, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return dsn
	}
	start := len(dsn) - len(rest)
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return dsn
	}
	colon := strings.IndexByte(rest[:at], ':')
	if colon < 0 {
		return dsn
	}
	return dsn[:start+colon+1] + redacted + dsn[start+at:]
}

// dsnSecrets returns the secrets of dsn, as written and unescaped.
func dsnSecrets(dsn string) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
			if e := url.QueryEscape(s); e != s {
				out = append(out, e)
			}
		}
	}
	if _, rest, ok := strings.Cut(dsn, "://"); ok {
		end := len(rest)
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			end = i
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				add(pw)
			}
		}
	}
	if u, err := url.Parse(dsn); err == nil {
		if u.User != nil {
			if pw, ok := u.User.Password(); ok {
				add(pw)
			}
		}
		if q, err := url.ParseQuery(u.RawQuery); err == nil {
			for k, vs := range q {
				if isSecretParam(k) {
					for _, v := range vs {
						add(v)
					}
				}
			}
		}
	}
	for _, m := range keywordSecret().FindAllStringSubmatch(dsn, -1) {
		add(strings.Trim(m[2], "'"))
	}
	return out
}

// RedactMessage hides dsn's secrets in msg, a driver's or our own message
// that may quote the DSN or a part of it. Only the DSN itself, its
// "user:secret@" and "key=secret" forms and, for secrets of 8 characters
// or more, the bare secret are replaced: a one-letter password must not
// turn "failed to connect" into "failed xxxxxo connecxxxxx".
func RedactMessage(msg, dsn string) string {
	if dsn == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, dsn, RedactDSN(dsn))
	for _, s := range dsnSecrets(dsn) {
		msg = strings.ReplaceAll(msg, ":"+s+"@", ":"+redacted+"@")
		msg = replaceValue(msg, "="+s)
		if len(s) >= 8 {
			msg = strings.ReplaceAll(msg, s, redacted)
		}
	}
	return msg
}

// replaceValue replaces "=secret" where the secret ends at a separator
// (space, &, quote, end), so "=t" does not eat "=tcp".
func replaceValue(msg, needle string) string {
	var b strings.Builder
	for {
		i := strings.Index(msg, needle)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		end := i + len(needle)
		if end == len(msg) || strings.ContainsRune(" \t\n&'\"`;,)", rune(msg[end])) {
			b.WriteString(msg[:i])
			b.WriteString("=" + redacted)
		} else {
			b.WriteString(msg[:end])
		}
		msg = msg[end:]
	}
}
