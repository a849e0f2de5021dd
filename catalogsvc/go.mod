module github.com/ferrygw/ferry/catalogsvc

go 1.25.0
