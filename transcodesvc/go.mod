module github.com/ferrygw/ferry/transcodesvc

go 1.25.0
