module github.com/ferrygw/ferry/services/protoschema

go 1.26.0

require (
	github.com/bufbuild/protocompile v0.14.1
	github.com/ferrygw/ferry/services/api v0.0.0-00010101000000-000000000000
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/apache/arrow-go/v18 v18.9.0 // indirect
	github.com/goccy/go-json v0.12.0 // indirect
	github.com/google/flatbuffers v25.12.19+incompatible // indirect
	golang.org/x/exp v0.0.0-20260112195511-716be5621a96 // indirect
)

require (
	github.com/ferrygw/ferry/services/fluss v0.0.0
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0 // indirect
)

replace github.com/ferrygw/ferry/services/api => ../api

replace github.com/ferrygw/ferry/services/fluss => ../fluss
