// Package kafka is frontdoor's Kafka protocol transport: it frames and
// decodes requests from unmodified Kafka clients, sizes them before decoding
// (shape.go), dispatches them through the API registry (registry.go) to one
// handler per API and writes the responses back in request order. It serves
// the APIs of the connection itself (apiversions.go, sasl.go) and Metadata
// (metadata.go); the other APIs live in packages by concern (produce,
// consume, groupapi, txnapi, admin), each of which lists its APIs (APIs in apis.go)
// and adds its request layouts (shape.go) here. Package broker registers
// them all and builds the server.
package kafka
