package kafkabatch

import "fmt"

// Kafka error codes a refused batch turns into at the edge.
const (
	CodeCorruptMessage             int16 = 2
	CodeUnsupportedCompressionType int16 = 76
	CodeInvalidRecord              int16 = 87
)

// Error is a batch refusal that carries the Kafka error code the producer
// will see, so callers never have to guess a code from a message.
type Error struct {
	Code int16
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func corrupt(format string, args ...any) *Error {
	return &Error{Code: CodeCorruptMessage, Msg: fmt.Sprintf(format, args...)}
}
