// Command appendsvc writes Arrow record batches into Fluss tables over
// Fluss's own RPC protocol, on behalf of frontdoor.
package main

import (
	"os"

	"github.com/ferrygw/ferry/appendsvc/service"
	"github.com/ferrygw/ferry/services/runtime"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	os.Exit(runtime.Main(runtime.Service[*service.Config]{
		Name:          "appendsvc",
		DefaultListen: "127.0.0.1:7103",
		Version:       version,
		Declare:       service.Declare,
		Setup:         service.Setup,
	}))
}
