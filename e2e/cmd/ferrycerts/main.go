// Command ferrycerts issues the certificates of Ferry's internal gRPC mutual TLS for a local
// or test deployment (Compose, kind): a CA and one certificate per service, as PEM files in a
// directory, in the layout services/testenv/devpki describes. It is not a production PKI.
//
//	go run ./e2e/cmd/ferrycerts -dir ./certs                        # new CA, all four services
//	go run ./e2e/cmd/ferrycerts -dir ./certs -renew -names appendsvc # new appendsvc cert, same CA
//
// Each service then runs with FERRY_GRPC_TLS_CA=<dir>/ca.pem, FERRY_GRPC_TLS_CERT=<dir>/<name>.pem
// and FERRY_GRPC_TLS_KEY=<dir>/<name>-key.pem. Renewed files replace the old ones atomically and
// running services pick them up at their next handshake.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferrygw/ferry/services/testenv/devpki"
)

// defaultNames are the services; each presents its certificate as server and as client.
var defaultNames = []string{"catalogsvc", "transcodesvc", "appendsvc", "fetchsvc", "schemasvc", "frontdoor"}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ferrycerts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "directory to write ca.pem, ca-key.pem and <name>.pem/<name>-key.pem into (required)")
	names := fs.String("names", strings.Join(defaultNames, ","), "comma-separated certificate names; each becomes the certificate's first DNS SAN")
	hosts := fs.String("hosts", "", "comma-separated extra SANs for every certificate (host names or IPs); not needed by Ferry, which checks service names")
	renew := fs.Bool("renew", false, "issue from the existing CA in -dir instead of creating a new one")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *dir == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "ferrycerts: -dir is required and no arguments are accepted")
		return 2
	}
	list := split(*names)
	if len(list) == 0 {
		fmt.Fprintln(stderr, "ferrycerts: -names is empty")
		return 2
	}
	if err := issue(*dir, list, split(*hosts), *renew); err != nil {
		fmt.Fprintln(stderr, "ferrycerts:", err)
		return 1
	}
	for _, n := range list {
		fmt.Fprintf(stdout, "%s: %s %s\n", n, devpki.CertFile(*dir, n), devpki.KeyFile(*dir, n))
	}
	fmt.Fprintf(stdout, "CA: %s\n", filepath.Join(*dir, devpki.CAFile))
	return 0
}

func issue(dir string, names, hosts []string, renew bool) error {
	if !renew {
		if _, err := os.Stat(filepath.Join(dir, devpki.CAKeyFile)); err == nil {
			return fmt.Errorf("%s already holds a CA: use -renew to issue from it, or another -dir", dir)
		}
		return devpki.Generate(dir, names, hosts...)
	}
	ca, err := devpki.LoadCA(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		leaf, err := ca.Issue(n, hosts...)
		if err != nil {
			return err
		}
		if err := leaf.Write(dir, n); err != nil {
			return err
		}
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
