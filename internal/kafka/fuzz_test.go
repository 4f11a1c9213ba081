package kafka

import (
	"strings"
	"testing"
)

// FuzzPropertiesErrors: a --command-config file's errors are one line
// labelled with the file's name (name:line: key where a line is at fault,
// as ParseProperties promises), and never repeat a password the file holds.
// The fuzzer writes the token PASSWORD where a password goes
// (password="PASSWORD"); a leak is a message holding the password that,
// with another password of the same length put in its place, holds that
// one instead: the password's own text flows into the message.
func FuzzPropertiesErrors(f *testing.F) {
	f.Add("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"chaos\" password=\"PASSWORD\";\n", "hunter2")
	f.Add("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=BOGUS\nsasl.jaas.config=x username=\"u\" password=\"PASSWORD\";\n", "s3cret")
	f.Add("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=x password=\"PASSWORD\";\n", "pw0000")
	f.Add("security.protocol=BOGUS\n", "")
	f.Add("a\\\n", "")
	f.Fuzz(func(t *testing.T, body, password string) {
		msg := propertiesError(t, strings.ReplaceAll(body, "PASSWORD", password))
		if msg == "" || !leakable(body, password) || !strings.Contains(msg, password) {
			return
		}
		other := strings.Map(func(r rune) rune {
			if r == 'Z' {
				return 'Y'
			}
			return 'Z'
		}, password)
		if strings.Contains(propertiesError(t, strings.ReplaceAll(body, "PASSWORD", other)), other) {
			t.Fatalf("error repeats the password: %q", msg)
		}
	})
}

// propertiesError parses body and returns its error's text, checking it
// is one line naming the file ("" when body parses).
func propertiesError(t *testing.T, body string) string {
	t.Helper()
	_, err := ParseProperties([]byte(body), "client.properties")
	if err == nil {
		return ""
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "client.properties") || strings.Contains(msg, "\n") {
		t.Fatalf("error is not one line naming the file: %q", msg)
	}
	return msg
}

// leakable reports whether password is a plain password (letters and
// digits, 6 or more) placed only as password="PASSWORD" values in body.
func leakable(body, password string) bool {
	if len(password) < 6 || strings.Count(body, "PASSWORD") != strings.Count(body, `password="PASSWORD"`) || !strings.Contains(body, "PASSWORD") {
		return false
	}
	return strings.Trim(password, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == ""
}
