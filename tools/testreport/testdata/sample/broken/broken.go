// Package broken does not compile, so its tests cannot run.
package broken

var n int = "not a number"
