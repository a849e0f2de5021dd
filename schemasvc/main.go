// Command schemasvc is Ferry's Schema Registry: the Confluent-compatible
// REST API serializers and deserializers call, and the gRPC SchemaService
// transcodesvc and fetchsvc resolve schema ids with. Schemas live in a
// Fluss table Ferry owns; each subject is checked against, or derived from,
// the table of its topic (docs/schema-registry.md).
package main

import (
	"os"

	"github.com/ferrygw/ferry/schemasvc/service"
	"github.com/ferrygw/ferry/services/runtime"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	os.Exit(runtime.Main(runtime.Service[*service.Config]{
		Name:          "schemasvc",
		DefaultListen: "127.0.0.1:7106",
		Version:       version,
		Declare:       service.Declare,
		Setup:         service.Setup,
	}))
}
