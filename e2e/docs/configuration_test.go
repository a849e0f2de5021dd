package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// services are the binaries whose settings docs/configuration.md documents,
// as paths from the repository root (each is a main package).
var services = []string{"frontdoor", "catalogsvc", "transcodesvc", "appendsvc", "fetchsvc", "schemasvc"}

// configDoc is the document the generated tables live in, from the root.
const configDoc = "docs/configuration.md"

// setting is one line of a binary's -help output.
type setting struct {
	Flag    string // without the dash
	Env     string // "" when the setting has no environment variable
	Default string // as the binary prints it, or a CPU formula (cpuDefault)
	Usage   string
}

// repoRoot is the repository root, found from this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("repository root %s has no go.work: %v", root, err)
	}
	return root
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// buildServices builds every service once per test binary into a private
// directory. The tests share it; the directory is removed by TestMain.
func buildServices(t *testing.T) string {
	t.Helper()
	root := repoRoot(t) // outside Do: a Fatal inside it would mark the build done
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "ferry-docs-bin-")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		for _, s := range services {
			// One build per service so a failure names the broken one.
			cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(buildDir, s), "./"+s)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build ./%s: %v\n%s", s, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// runHelp runs bin with args in a minimal environment (no FERRY_* or OTEL_*
// from the developer's shell, GOMAXPROCS fixed) and returns what it printed.
func runHelp(t *testing.T, bin string, gomaxprocs int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "GOMAXPROCS=" + strconv.Itoa(gomaxprocs)}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v (help must exit 0)\n%s", filepath.Base(bin), strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// settingLine is runtime.Settings.WriteUsage's line: "  -flag / ENV (default "v")".
var settingLine = regexp.MustCompile(`^  -([a-z0-9-]+) / (\S+) \(default ("(?:[^"\\]|\\.)*")\)$`)

// parseSettingsUsage parses runtime.Settings usage output: a header line,
// then per setting one settingLine and one indented usage line.
func parseSettingsUsage(out string) ([]setting, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "Usage of ") {
		return nil, fmt.Errorf("not runtime.Settings usage output:\n%s", out)
	}
	var got []setting
	for i := 1; i < len(lines); i += 2 {
		m := settingLine.FindStringSubmatch(lines[i])
		if m == nil {
			return nil, fmt.Errorf("line %d %q is not a setting line", i+1, lines[i])
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "      ") {
			return nil, fmt.Errorf("setting -%s has no usage line", m[1])
		}
		def, err := strconv.Unquote(m[3])
		if err != nil {
			return nil, fmt.Errorf("setting -%s: default %s: %v", m[1], m[3], err)
		}
		env := m[2]
		if env == "-" {
			env = ""
		}
		got = append(got, setting{Flag: m[1], Env: env, Default: def, Usage: strings.TrimSpace(lines[i+1])})
	}
	return got, nil
}

// stdFlagLine is the flag package's PrintDefaults line: "  -name type" or "  -name".
var stdFlagLine = regexp.MustCompile(`^  -([a-z0-9-]+)(?: (\S+))?$`)

// stdDefault is the flag package's default suffix of a usage line.
var stdDefault = regexp.MustCompile(`^(.*?)(?: \(default (.*)\))?$`)

// parseStdFlagUsage parses the flag package's usage output (for `frontdoor
// hash-password -h`, which uses a plain FlagSet).
func parseStdFlagUsage(out string) ([]setting, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "Usage of ") {
		return nil, fmt.Errorf("not flag package usage output:\n%s", out)
	}
	var got []setting
	for i := 1; i < len(lines); i += 2 {
		m := stdFlagLine.FindStringSubmatch(lines[i])
		if m == nil || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "    \t") {
			return nil, fmt.Errorf("line %d %q is not a flag and usage pair", i+1, lines[i])
		}
		u := stdDefault.FindStringSubmatch(strings.TrimSpace(lines[i+1]))
		def := u[2]
		if uq, err := strconv.Unquote(def); err == nil {
			def = uq
		}
		got = append(got, setting{Flag: m[1], Default: def, Usage: u[1]})
	}
	return got, nil
}

// serviceSettings returns svc's settings. Defaults that scale with the
// number of CPUs (GOMAXPROCS) are found by running -help under two
// GOMAXPROCS values and written as a formula, so the document does not
// depend on the machine it was generated on; any other default that moves
// with GOMAXPROCS fails the test.
func serviceSettings(t *testing.T, svc string) []setting {
	t.Helper()
	bin := filepath.Join(buildServices(t), svc)
	one, err := parseSettingsUsage(runHelp(t, bin, 1, "-help"))
	if err != nil {
		t.Fatalf("%s -help: %v", svc, err)
	}
	three, err := parseSettingsUsage(runHelp(t, bin, 3, "-help"))
	if err != nil {
		t.Fatalf("%s -help: %v", svc, err)
	}
	if len(one) != len(three) {
		t.Fatalf("%s -help lists %d settings with GOMAXPROCS=1 and %d with GOMAXPROCS=3", svc, len(one), len(three))
	}
	for i := range one {
		if one[i].Default == three[i].Default {
			continue
		}
		f, err := cpuDefault(one[i].Default, three[i].Default)
		if err != nil {
			t.Fatalf("%s -%s: %v", svc, one[i].Flag, err)
		}
		one[i].Default = f
	}
	return one
}

// cpuDefault turns the defaults printed under GOMAXPROCS 1 and 3 into
// "k × GOMAXPROCS", if they are one.
func cpuDefault(at1, at3 string) (string, error) {
	k, err1 := strconv.Atoi(at1)
	k3, err3 := strconv.Atoi(at3)
	if err1 != nil || err3 != nil || k <= 0 || k3 != 3*k {
		return "", fmt.Errorf("default changes with GOMAXPROCS (%q at 1, %q at 3) but is not a multiple of it", at1, at3)
	}
	if k == 1 {
		return "GOMAXPROCS", nil
	}
	return strconv.Itoa(k) + " × GOMAXPROCS", nil
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// renderRow is one table row; its first cell starts with "| `-flag` |".
func renderRow(s setting, withEnv bool) string {
	def := "`" + s.Default + "`"
	switch {
	case s.Default == "":
		def = "(empty)"
	case strings.Contains(s.Default, "GOMAXPROCS"):
		def = s.Default + " (CPUs)"
	}
	if !withEnv {
		return fmt.Sprintf("| `-%s` | %s | %s |", s.Flag, def, mdCell(s.Usage))
	}
	env := "(flag only)"
	if s.Env != "" {
		env = "`" + s.Env + "`"
	}
	return fmt.Sprintf("| `-%s` | %s | %s | %s |", s.Flag, env, def, mdCell(s.Usage))
}

// renderTable is the generated block's content for one binary.
func renderTable(name string, settings []setting, withEnv bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Generated from `%s -help` by e2e/docs; do not edit. Regenerate: cd e2e && FERRY_DOCS_UPDATE=1 go test ./docs -->\n\n", name)
	if withEnv {
		b.WriteString("| flag | environment variable | default | meaning |\n| --- | --- | --- | --- |\n")
	} else {
		b.WriteString("| flag | default | meaning |\n| --- | --- | --- |\n")
	}
	for _, s := range settings {
		b.WriteString(renderRow(s, withEnv) + "\n")
	}
	return b.String()
}

func beginMarker(name string) string { return "<!-- begin settings: " + name + " -->\n" }
func endMarker(name string) string   { return "<!-- end settings: " + name + " -->" }

// block returns the start and end offsets of the content between name's markers.
func block(doc, name string) (int, int, error) {
	b := strings.Index(doc, beginMarker(name))
	if b < 0 {
		return 0, 0, fmt.Errorf("%s has no %q marker", configDoc, strings.TrimSpace(beginMarker(name)))
	}
	b += len(beginMarker(name))
	e := strings.Index(doc[b:], endMarker(name))
	if e < 0 {
		return 0, 0, fmt.Errorf("%s has no %q marker after the begin marker", configDoc, endMarker(name))
	}
	return b, b + e, nil
}

// rowFlag extracts the flag from a table row written by renderRow.
var rowFlag = regexp.MustCompile("^\\| `-([a-z0-9-]+)` \\|")

// diffRows explains how a documented block differs from the binary's
// settings, one line per setting: undocumented, stale or changed.
func diffRows(name, documented, want string) []string {
	rows := func(s string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(s, "\n") {
			if f := rowFlag.FindStringSubmatch(l); f != nil {
				m[f[1]] = l
			}
		}
		return m
	}
	have, need := rows(documented), rows(want)
	var out []string
	for f, w := range need {
		switch h, ok := have[f]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s: setting -%s is not documented; the binary says:\n    %s", name, f, w))
		case h != w:
			out = append(out, fmt.Sprintf("%s: setting -%s is documented differently:\n    doc:    %s\n    binary: %s", name, f, h, w))
		}
	}
	for f := range have {
		if _, ok := need[f]; !ok {
			out = append(out, fmt.Sprintf("%s: documents -%s, which the binary does not have", name, f))
		}
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("%s: every setting is documented, but the generated block's text differs (header, order or comment)", name))
	}
	return out
}

// TestConfigurationDocMatchesBinaries is the drift check: the settings
// tables in docs/configuration.md must be exactly what the binaries print.
func TestConfigurationDocMatchesBinaries(t *testing.T) {
	root := repoRoot(t)
	path := filepath.Join(root, configDoc)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)

	type gen struct {
		name string
		want string
	}
	var gens []gen
	for _, svc := range services {
		gens = append(gens, gen{svc, renderTable(svc, serviceSettings(t, svc), true)})
	}
	hp, err := parseStdFlagUsage(runHelp(t, filepath.Join(buildServices(t), "frontdoor"), 1, "hash-password", "-h"))
	if err != nil {
		t.Fatalf("frontdoor hash-password -h: %v", err)
	}
	gens = append(gens, gen{"frontdoor hash-password", renderTable("frontdoor hash-password", hp, false)})

	update := os.Getenv("FERRY_DOCS_UPDATE") == "1"
	var problems []string
	for _, g := range gens {
		b, e, err := block(doc, g.name)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if doc[b:e] == g.want {
			continue
		}
		if update {
			doc = doc[:b] + g.want + doc[e:]
			continue
		}
		problems = append(problems, diffRows(g.name, doc[b:e], g.want)...)
	}
	if update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the generated tables of %s", path)
	}
	if len(problems) > 0 {
		t.Errorf("%s does not match the binaries (fix the prose if needed, then regenerate: cd e2e && FERRY_DOCS_UPDATE=1 go test ./docs):\n%s",
			configDoc, strings.Join(problems, "\n"))
	}
}

// TestDocsNameOnlyRealSettings checks the prose: every FERRY_* variable and
// every backquoted -flag that the settings documents mention must be a
// setting of some binary, so a renamed setting cannot linger in the text.
func TestDocsNameOnlyRealSettings(t *testing.T) {
	root := repoRoot(t)
	known := map[string]bool{"-h": true, "-help": true}
	for _, svc := range services {
		for _, s := range serviceSettings(t, svc) {
			known["-"+s.Flag] = true
			if s.Env != "" {
				known[s.Env] = true
			}
		}
	}
	hp, err := parseStdFlagUsage(runHelp(t, filepath.Join(buildServices(t), "frontdoor"), 1, "hash-password", "-h"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range hp {
		known["-"+s.Flag] = true
	}
	// Variables that are not service settings but may be named in the docs:
	// test and tool switches, documented where they are read.
	notSettings := regexp.MustCompile(`^FERRY_(TEST_|DOCS_UPDATE$|JAEGER_UI_ASSETS$|CLIENTS_CAPTURE_OUT$)`)
	envRef := regexp.MustCompile(`\bFERRY_[A-Z0-9_]+\b`)
	flagRef := regexp.MustCompile("`(-[a-z][a-z0-9-]*)[ =`]")
	for _, name := range []string{"docs/configuration.md", "docs/limits.md"} {
		raw, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is missing", name)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, ref := range envRef.FindAllString(text, -1) {
			if !known[ref] && !notSettings.MatchString(ref) {
				t.Errorf("%s names %s, which no service declares", name, ref)
			}
		}
		for _, m := range flagRef.FindAllStringSubmatch(text, -1) {
			if !known[m[1]] {
				t.Errorf("%s names the flag %s, which no service declares", name, m[1])
			}
		}
	}
}
