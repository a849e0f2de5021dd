// Command transcodesvc turns Kafka record batches into Arrow IPC batches for
// Fluss. It is stateless, so it scales by running more replicas.
package main

import (
	"os"

	"github.com/ferrygw/ferry/services/runtime"
	"github.com/ferrygw/ferry/transcodesvc/service"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	os.Exit(runtime.Main(runtime.Service[*service.Config]{
		Name:          "transcodesvc",
		DefaultListen: "127.0.0.1:7102",
		Version:       version,
		Declare:       service.Declare,
		Setup:         service.Setup,
	}))
}
