// Command catalogsvc maps Kafka topic names to pre-created Fluss tables and
// answers frontdoor's Metadata questions over gRPC. The mapping contract is
// docs/mapping.md; the wiring lives in internal/service.
package main

import (
	"os"

	"github.com/ferrygw/ferry/catalogsvc/service"
	"github.com/ferrygw/ferry/services/runtime"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	os.Exit(runtime.Main(runtime.Service[*service.Config]{
		Name:          "catalogsvc",
		DefaultListen: "127.0.0.1:7101",
		Version:       version,
		Declare:       service.Declare,
		Setup:         service.Setup,
	}))
}
