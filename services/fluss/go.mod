module github.com/ferrygw/ferry/services/fluss

go 1.25.0
