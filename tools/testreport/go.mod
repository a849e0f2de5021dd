module github.com/ferrygw/ferry/tools/testreport

go 1.26.0
