// Command ferry runs every Ferry service in one process: catalogsvc,
// schemasvc, transcodesvc, appendsvc, fetchsvc and frontdoor, calling each other
// through their gRPC client interfaces in-process (services/runtime/inproc)
// instead of over the network. It takes the union of the services'
// settings, with the same flags and environment variables; a setting
// several services have (-fluss-bootstrap) is one setting. The addresses
// of the peers (-catalog-addr, -transcode-addr, -append-addr, -fetch-addr)
// are not used.
//
// The process serves one gRPC port (-listen) with every service and the
// health service on it, one Kafka port, the Schema Registry's REST port
// (-registry-listen) and, with -metrics-addr, one metrics endpoint. The microservices topology (one process per service,
// scaled apart) is what compose and Helm deploy; this is the small
// deployment and the one with the least CPU per record.
package main

import (
	"os"

	"github.com/ferrygw/ferry/services/runtime"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	os.Exit(runtime.Main(service(version)))
}
