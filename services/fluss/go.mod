module github.com/ferrygw/ferry/services/fluss

go 1.26.0

require github.com/apache/arrow-go/v18 v18.9.0

require (
	github.com/goccy/go-json v0.12.0 // indirect
	github.com/google/flatbuffers v25.12.19+incompatible // indirect
	golang.org/x/exp v0.0.0-20260112195511-716be5621a96 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
