package saslscram

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// UsersCommand implements `frontdoor scram-users -file F add|remove|list
// [USER]`. add reads the password from stdin (one line, so it stays out of
// shell history and process lists) and writes a credential for each
// mechanism asked for; the file is replaced atomically, so a frontdoor
// watching it never reads half a file. It returns the process exit code.
func UsersCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scram-users", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "", "credentials file (created by add if missing)")
	iterations := fs.Int("iterations", 8192, fmt.Sprintf("PBKDF2 iterations (at least %d)", MinIterations))
	mechanism := fs.String("mechanism", "all", SHA256+", "+SHA512+" or all")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: frontdoor scram-users -file F [-iterations N] [-mechanism M] add USER < password")
		fmt.Fprintln(stderr, "       frontdoor scram-users -file F remove USER")
		fmt.Fprintln(stderr, "       frontdoor scram-users -file F list")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "scram-users: "+format+"\n", a...)
		return code
	}
	if *file == "" {
		return fail(2, "-file is required")
	}
	mechs := Mechanisms
	if *mechanism != "all" {
		if _, err := hashFor(*mechanism); err != nil {
			return fail(2, "-mechanism: %v", err)
		}
		mechs = []string{*mechanism}
	}
	store := &Store{}
	if b, err := os.ReadFile(*file); err == nil {
		if store, err = Parse(b); err != nil {
			return fail(1, "%s: %v", *file, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) || fs.Arg(0) != "add" {
		return fail(1, "%v", err)
	}
	switch {
	case fs.NArg() == 1 && fs.Arg(0) == "list":
		for _, u := range store.Users() {
			var have []string
			for _, m := range Mechanisms {
				if c, ok := store.Lookup(u, m); ok {
					have = append(have, fmt.Sprintf("%s(%d)", m, c.Iterations))
				}
			}
			fmt.Fprintf(stdout, "%s %s\n", u, strings.Join(have, " "))
		}
		return 0
	case fs.NArg() == 2 && fs.Arg(0) == "add":
		user := fs.Arg(1)
		if user == "" || strings.ContainsAny(user, ":#\n") {
			return fail(2, "user %q: must be non-empty without ':', '#' or newlines", user)
		}
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fail(1, "read password: %v", err)
		}
		password := strings.TrimRight(line, "\r\n")
		if password == "" {
			return fail(2, "empty password on stdin")
		}
		for _, m := range mechs {
			c, err := NewCredential(m, password, *iterations)
			if err != nil {
				return fail(2, "%v", err)
			}
			store.Set(user, c)
		}
	case fs.NArg() == 2 && fs.Arg(0) == "remove":
		if !store.Remove(fs.Arg(1)) {
			return fail(1, "no user %q in %s", fs.Arg(1), *file)
		}
	default:
		fs.Usage()
		return 2
	}
	if err := writeAtomically(*file, store.Bytes()); err != nil {
		return fail(1, "%v", err)
	}
	return 0
}

// writeAtomically replaces path with data through a temporary file and a rename.
func writeAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
