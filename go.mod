module github.com/ringfire/ringfire

go 1.26.0

require (
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
)
