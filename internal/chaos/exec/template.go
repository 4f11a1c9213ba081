package exec

import (
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// Placeholders a template may use.
const (
	PlaceholderID   = "id"
	PlaceholderHost = "host"
	PlaceholderPort = "port"
)

// Template is a command or name with {id}, {host} and {port} placeholders
// standing for a broker's id and its advertised host and port. "{{" and
// "}}" stand for literal braces, and "${...}" is left to the shell; any
// other "{word}" is an error, so a misspelt placeholder never reaches a
// shell.
type Template struct {
	raw   string
	parts []part
}

// part is literal text, or a placeholder when name is set.
type part struct{ text, name string }

// ParseTemplate parses s; its errors are usage errors naming field.
func ParseTemplate(field, s string) (Template, error) {
	t := Template{raw: s}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '{' && (i == 0 || s[i-1] != '$'):
			end := strings.IndexByte(s[i:], '}')
			name := ""
			if end > 0 {
				name = s[i+1 : i+end]
			}
			if !isWord(name) {
				// Not a placeholder (e.g. awk's '{print $1}'): literal.
				lit.WriteByte(c)
				continue
			}
			switch name {
			case PlaceholderID, PlaceholderHost, PlaceholderPort:
			default:
				return Template{}, errkind.Usagef(field, "unknown placeholder {%s} in %q (want {id}, {host} or {port}; {{ and }} for literal braces)", name, s)
			}
			flush()
			t.parts = append(t.parts, part{name: name})
			i += end
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return t, nil
}

// isWord reports whether s is a placeholder-like word: letters, digits,
// '_' and '-', not empty.
func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !isAlnum(r) && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

// String returns the template as given.
func (t Template) String() string { return t.raw }

// Empty reports whether the template is empty.
func (t Template) Empty() bool { return strings.TrimSpace(t.raw) == "" }

// Uses reports whether the template uses placeholder name.
func (t Template) Uses(name string) bool {
	for _, p := range t.parts {
		if p.name == name {
			return true
		}
	}
	return false
}

// Expand fills the placeholders with b's id, advertised host and port. A
// host that is not a plain host name or address (letters, digits, '.',
// '-', '_', ':', '%') is refused (errkind.Refused, field "host"): it comes
// from Kafka's metadata and goes into a shell command.
func (t Template) Expand(b chaos.Broker) (string, error) {
	var out strings.Builder
	for _, p := range t.parts {
		switch p.name {
		case "":
			out.WriteString(p.text)
		case PlaceholderID:
			out.WriteString(strconv.Itoa(int(b.ID)))
		case PlaceholderPort:
			out.WriteString(strconv.Itoa(int(b.Port)))
		case PlaceholderHost:
			if !SafeHost(b.Host) {
				return "", errkind.Refusedf("host", "broker %d advertises host %q, which kplan will not put into a command", b.ID, b.Host)
			}
			out.WriteString(b.Host)
		}
	}
	return out.String(), nil
}

// SafeHost reports whether h is a plain host name or address.
func SafeHost(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if !isAlnum(r) && !strings.ContainsRune(".-_:%", r) {
			return false
		}
	}
	return true
}

// isAlnum reports whether r is an ASCII letter or digit.
func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}
