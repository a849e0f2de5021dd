module github.com/ferrygw/ferry/services/testenv

go 1.26.0
