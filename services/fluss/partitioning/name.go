package partitioning

import (
	"fmt"
	"strings"
)

// maxValueLength is the longest partition value Fluss accepts (TablePath's
// MAX_NAME_LENGTH, which partition values share with table names).
const maxValueLength = 200

// internalPrefix starts names Fluss reserves for itself; CreatePartition
// refuses values with it.
const internalPrefix = "__"

// Values splits a partition name into its values, one per partition key.
func Values(name string) []string { return strings.Split(name, Separator) }

// ValidateValue reports why the coordinator would refuse a partition value
// with PARTITION_SPEC_INVALID_EXCEPTION (PartitionUtils.validatePartitionValues):
// empty, "." or "..", longer than 200 characters, a character other than
// ASCII letters, digits, '_' and '-', or, when creating, the reserved "__"
// prefix. Values formatted from rows can fail it too: a STRING key with a
// space, a negative timestamp year, ...
func ValidateValue(v string, create bool) error {
	switch {
	case v == "":
		return fmt.Errorf("partition value is empty")
	case v == "." || v == "..":
		return fmt.Errorf("partition value %q is not allowed", v)
	case len(v) > maxValueLength:
		return fmt.Errorf("partition value %q is longer than %d characters", v, maxValueLength)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("partition value %q has characters other than ASCII letters, digits, '_' and '-'", v)
		}
	}
	if create && strings.HasPrefix(v, internalPrefix) {
		return fmt.Errorf("partition value %q starts with %q, which Fluss reserves", v, internalPrefix)
	}
	return nil
}

// ValidateName checks a partition name for a table with numKeys partition
// keys: one value per key, each passing ValidateValue.
func ValidateName(name string, numKeys int, create bool) error {
	values := Values(name)
	if len(values) != numKeys {
		return fmt.Errorf("partition name %q has %d values, the table has %d partition keys", name, len(values), numKeys)
	}
	for _, v := range values {
		if err := ValidateValue(v, create); err != nil {
			return err
		}
	}
	return nil
}
