module github.com/ferrygw/ferry/e2e

go 1.25.0
