module github.com/ferrygw/ferry/appendsvc

go 1.25.0
