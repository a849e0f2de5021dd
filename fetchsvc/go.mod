module github.com/ferrygw/ferry/fetchsvc

go 1.26.0

require (
	github.com/apache/arrow-go/v18 v18.9.0
	github.com/ferrygw/ferry/services/api v0.0.0
	github.com/ferrygw/ferry/services/fluss v0.0.0
	github.com/ferrygw/ferry/services/recordbatch v0.0.0
)

require (
	github.com/goccy/go-json v0.12.0 // indirect
	github.com/google/flatbuffers v25.12.19+incompatible // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/twmb/franz-go v1.22.3 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/exp v0.0.0-20260112195511-716be5621a96 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/ferrygw/ferry/services/api => ../services/api
	github.com/ferrygw/ferry/services/fluss => ../services/fluss
	github.com/ferrygw/ferry/services/recordbatch => ../services/recordbatch
)
