package saslplain

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// HashPasswordCommand implements `frontdoor hash-password [-user NAME]
// [-cost N]`: it reads one password line from stdin (so it stays out of
// shell history and process lists) and prints the users-file line or hash.
// It returns the process exit code.
func HashPasswordCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hash-password", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "print a complete users-file line for this user")
	cost := fs.Int("cost", bcrypt.DefaultCost, fmt.Sprintf("bcrypt cost (%d-%d)", bcrypt.MinCost, bcrypt.MaxCost))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *cost < bcrypt.MinCost || *cost > bcrypt.MaxCost {
		fmt.Fprintf(stderr, "hash-password: -cost %d outside %d-%d\n", *cost, bcrypt.MinCost, bcrypt.MaxCost)
		return 2
	}
	if strings.Contains(*user, ":") {
		fmt.Fprintln(stderr, "hash-password: -user must not contain ':'")
		return 2
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "hash-password: read password: %v\n", err)
		return 1
	}
	pw := strings.TrimRight(line, "\r\n")
	h, err := Hash([]byte(pw), *cost)
	if err != nil {
		fmt.Fprintf(stderr, "hash-password: %v\n", err)
		return 1
	}
	if *user != "" {
		fmt.Fprintf(stdout, "%s:%s\n", *user, h)
	} else {
		fmt.Fprintln(stdout, h)
	}
	return 0
}
