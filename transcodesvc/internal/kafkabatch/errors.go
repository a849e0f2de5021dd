package kafkabatch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/services/recordbatch"
)

// corrupt is a refusal of records that do not decode: CORRUPT_MESSAGE.
// Decode's errors are all *recordbatch.Error, with the Kafka code to answer.
func corrupt(format string, args ...any) *recordbatch.Error {
	return &recordbatch.Error{Code: kerr.CorruptMessage.Code, Msg: fmt.Sprintf(format, args...)}
}
