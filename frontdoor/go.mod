module github.com/ferrygw/ferry/frontdoor

go 1.25.0
