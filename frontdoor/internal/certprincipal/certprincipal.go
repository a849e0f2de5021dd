// Package certprincipal turns a client certificate's subject into a
// principal name with rules written as Kafka's ssl.principal.mapping.rules:
//
//	RULE:^CN=([^,]+),OU=clients,.*$/$1/L, RULE:^CN=([^,]+)$/$1/, DEFAULT
//
// Rules are tried in order against the subject in RFC 2253 form ("CN=alice,
// OU=clients,O=Acme"); the first whose pattern matches the whole subject
// gives the name: its replacement ($1.. for groups), lower-cased with L or
// upper-cased with U. DEFAULT gives the whole subject. A subject no rule
// matches has no principal, and the client is refused.
package certprincipal

import (
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

type rule struct {
	dflt        bool
	pattern     *regexp.Regexp
	replacement string
	fold        byte // 0, 'L' or 'U'
}

// Rules are parsed mapping rules.
type Rules struct {
	rules []rule
}

// ruleSyntax matches one rule: DEFAULT or RULE:pattern/replacement/[LU],
// where pattern and replacement may contain escaped slashes.
var ruleSyntax = regexp.MustCompile(`^\s*(?:(DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?))\s*(?:,|$)`)

// Parse reads a rules string; empty means DEFAULT.
func Parse(s string) (*Rules, error) {
	r := &Rules{}
	rest := strings.TrimSpace(s)
	if rest == "" {
		rest = "DEFAULT"
	}
	for rest != "" {
		m := ruleSyntax.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("principal rules: cannot parse %q: want RULE:pattern/replacement/[LU] or DEFAULT, separated by commas", rest)
		}
		rest = strings.TrimSpace(rest[len(m[0]):])
		if m[1] != "" {
			r.rules = append(r.rules, rule{dflt: true})
			continue
		}
		pattern := strings.ReplaceAll(m[2], `\/`, "/")
		re, err := regexp.Compile("^(?:" + pattern + ")$")
		if err != nil {
			return nil, fmt.Errorf("principal rules: pattern %q: %w", pattern, err)
		}
		ru := rule{pattern: re, replacement: strings.ReplaceAll(m[3], `\/`, "/")}
		if m[4] != "" {
			ru.fold = m[4][0]
		}
		r.rules = append(r.rules, ru)
	}
	return r, nil
}

// ErrNoRule means no rule matched the subject.
var ErrNoRule = errors.New("no principal mapping rule matches the certificate subject")

// Name maps a subject (RFC 2253 form) to a principal name.
func (r *Rules) Name(subject string) (string, error) {
	for _, ru := range r.rules {
		if ru.dflt {
			return subject, nil
		}
		m := ru.pattern.FindStringSubmatchIndex(subject)
		if m == nil {
			continue
		}
		name := string(ru.pattern.ExpandString(nil, ru.replacement, subject, m))
		switch ru.fold {
		case 'L':
			name = strings.ToLower(name)
		case 'U':
			name = strings.ToUpper(name)
		}
		if name == "" {
			return "", fmt.Errorf("principal rules: subject %q maps to an empty name", subject)
		}
		return name, nil
	}
	return "", fmt.Errorf("%w: %q", ErrNoRule, subject)
}

// Subject is the certificate subject in RFC 2253 form, as Kafka's mapping
// rules see it (Java's X500Principal.getName()).
func Subject(cert *x509.Certificate) string { return cert.Subject.String() }
