package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// ownDocs are the pages this package keeps honest; their links must lead to
// files that exist and, with a #fragment, to headings that exist, so a page
// renamed or restructured by its owner breaks this test rather than the link.
var ownDocs = []string{"docs/README.md", "docs/configuration.md", "docs/clients.md", "docs/limits.md"}

// mdLink matches an inline Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is GitHub's heading anchor: lower case, punctuation other than '-'
// and '_' dropped, spaces turned into '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the heading anchors of a Markdown file, skipping code blocks.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		h = strings.NewReplacer("`", "", "*", "").Replace(h)
		out[slug(h)] = true
	}
	return out
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"4. Which tables can be topics", "4-which-tables-can-be-topics"},
		{"Idempotence and transactions (for now)", "idempotence-and-transactions-for-now"},
		{"SASL/PLAIN", "saslplain"},
		{"frontdoor hash-password", "frontdoor-hash-password"},
		{"What holds, and where it ends", "what-holds-and-where-it-ends"},
	} {
		if got := slug(c.in); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDocLinksResolve(t *testing.T) {
	root := repoRoot(t)
	for _, name := range ownDocs {
		raw, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		text := string(raw)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := filepath.Join(root, name) // a bare #fragment points into this page
			if file != "" {
				path = filepath.Join(root, filepath.Dir(name), file)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				if info, serr := os.Stat(path); serr == nil && info.IsDir() {
					continue
				}
				t.Errorf("%s links to %s, which does not exist", name, target)
				continue
			}
			if frag != "" && !anchors(string(data))[frag] {
				t.Errorf("%s links to %s: %s has no heading with anchor #%s", name, target, file, frag)
			}
		}
	}
}
