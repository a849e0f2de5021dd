package mapping

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/partitioning"
)

// Partition is one Fluss partition of a partitioned table.
type Partition struct {
	ID int64
	// Values are the partition key values, in the table's key order.
	Values []string
}

// Name is Fluss's name of the partition: its values joined by "$".
func (p Partition) Name() string { return strings.Join(p.Values, partitioning.Separator) }

// PartitionTopicName is the topic of the Fluss partition with values of
// the table whose topic is tableTopic: the table's topic, a dot, and the
// values joined by dots (docs/mapping.md §4.5). Fluss partition values are
// ASCII letters, digits, '_' and '-' (PartitionUtils refuses anything
// else), so they never contain the dot that separates them, and a table
// has a fixed number of partition keys: the name splits back into one
// table topic and one partition. It fails for a value Kafka cannot carry
// and for names longer than Kafka's 249 characters.
func PartitionTopicName(tableTopic string, values []string) (string, error) {
	if len(values) == 0 {
		return "", fmt.Errorf("partition has no values")
	}
	for _, v := range values {
		if err := partitioning.ValidateValue(v, false); err != nil {
			return "", err
		}
	}
	name := tableTopic + "." + strings.Join(values, ".")
	if err := ValidateTopicName(name); err != nil {
		return "", err
	}
	return name, nil
}

// PartitionTopicID is the Kafka topic id of the topic of Fluss partition
// partitionID of table tableID: like TopicID, stable for the partition's
// life. Fluss never reuses partition ids, so a partition dropped and
// created again under the same name is a new topic to clients, as a
// recreated Kafka topic is.
func PartitionTopicID(clusterID string, tableID, partitionID int64) uuid.UUID {
	return uuid.NewSHA1(idNamespace, []byte("partition/"+clusterID+"/"+strconv.FormatInt(tableID, 10)+"/"+strconv.FormatInt(partitionID, 10)))
}

// PartitionTopic is the mapping of the topic of Fluss partition p of the
// partitioned table whose topic mapping is table: the same columns and
// record mapping, the table's bucket count as partitions, a name and id of
// its own, and FlussPartition set. It fails when the partition cannot be
// named as a topic.
func PartitionTopic(table *catalogv1.TopicMapping, p Partition, clusterID string) (*catalogv1.TopicMapping, error) {
	if n := len(table.GetPartitionKeys()); n == 0 || len(p.Values) != n {
		return nil, fmt.Errorf("partition %q has %d values, table %s.%s has %d partition keys",
			p.Name(), len(p.Values), table.GetDatabase(), table.GetTable(), n)
	}
	name, err := PartitionTopicName(table.GetTopic(), p.Values)
	if err != nil {
		return nil, err
	}
	m := proto.Clone(table).(*catalogv1.TopicMapping)
	id := PartitionTopicID(clusterID, table.GetTableId(), p.ID)
	m.Topic, m.TopicId = name, id[:]
	m.FlussPartition = &catalogv1.FlussPartition{Id: p.ID, Name: p.Name(), TableTopic: table.GetTopic()}
	// The table's mapping id, this topic's name and its partition: a new
	// table mapping changes every partition's id with it.
	h := sha256.New()
	writeField(h, []byte(table.GetMappingId()))
	writeField(h, []byte(name))
	writeField(h, []byte(strconv.FormatInt(p.ID, 10)))
	m.MappingId = hex.EncodeToString(h.Sum(nil)[:16])
	return m, nil
}
