// Command frontdoor terminates Kafka client connections and fans Produce
// work out to catalogsvc, transcodesvc and appendsvc over gRPC.
//
// `frontdoor hash-password` prints a bcrypt hash for the SASL/PLAIN users
// file; `frontdoor scram-users` edits the SASL/SCRAM credentials file.
package main

import (
	"os"

	"github.com/ferrygw/ferry/frontdoor/gateway"
	"github.com/ferrygw/ferry/frontdoor/internal/saslplain"
	"github.com/ferrygw/ferry/frontdoor/internal/saslscram"
	"github.com/ferrygw/ferry/services/runtime"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "hash-password" {
		os.Exit(saslplain.HashPasswordCommand(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "scram-users" {
		os.Exit(saslscram.UsersCommand(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(runtime.Main(runtime.Service[*gateway.Config]{
		Name:          "frontdoor",
		DefaultListen: "127.0.0.1:7104",
		Version:       version,
		Declare:       gateway.Declare,
		Setup:         gateway.Setup,
	}))
}
