// Command fetchsvc serves Fluss tables to Kafka consumers on behalf of
// frontdoor: it reads log buckets over Fluss's own RPC protocol and answers
// with Kafka record batches rebuilt per each topic's mapping.
package main

import (
	"os"

	"github.com/ferrygw/ferry/fetchsvc/service"
	"github.com/ferrygw/ferry/services/runtime"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	os.Exit(runtime.Main(runtime.Service[*service.Config]{
		Name:          "fetchsvc",
		DefaultListen: "127.0.0.1:7105",
		Version:       version,
		Declare:       service.Declare,
		Setup:         service.Setup,
	}))
}
