package produce

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DedupeProduce merges a Produce request's duplicate entries the way
// Apache Kafka 4.4 does (KafkaApis keys the partitions by topic and
// partition in a map, so a later entry replaces an earlier one): each
// topic is answered once, under its first appearance, and each partition
// once, with the last entry sent for it; earlier entries are neither
// stored nor answered. It rewrites r.Topics only when there are
// duplicates, and returns how many entries it dropped.
//
// Besides matching Kafka, one entry per partition keeps the partition
// order of a request free of cycles: the workers serving a request never
// wait for a sequencer ticket of the same request.
func DedupeProduce(r *kmsg.ProduceRequest) int {
	entries := 0
	for i := range r.Topics {
		entries += len(r.Topics[i].Partitions)
	}
	if entries <= 1 && len(r.Topics) <= 1 {
		return 0
	}
	// Topics by first appearance.
	topicIdx := make(map[string]int, len(r.Topics))
	canon := make([]int, len(r.Topics))
	for i := range r.Topics {
		idx, ok := topicIdx[r.Topics[i].Topic]
		if !ok {
			idx = len(topicIdx)
			topicIdx[r.Topics[i].Topic] = idx
		}
		canon[i] = idx
	}
	// Sorting (topic, partition, position) puts duplicates side by side;
	// 16 bytes an entry, where a map would take several times that.
	type entry struct {
		key uint64 // canonical topic << 32 | partition
		pos int32
	}
	keys := make([]entry, 0, entries)
	for i := range r.Topics {
		for _, p := range r.Topics[i].Partitions {
			keys = append(keys, entry{uint64(canon[i])<<32 | uint64(uint32(p.Partition)), int32(len(keys))})
		}
	}
	slices.SortFunc(keys, func(a, b entry) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	var dropped []bool
	n := 0
	for i := 0; i+1 < len(keys); i++ {
		if keys[i].key == keys[i+1].key {
			if dropped == nil {
				dropped = make([]bool, entries)
			}
			dropped[keys[i].pos] = true
			n++
		}
	}
	if n == 0 && len(topicIdx) == len(r.Topics) {
		return 0
	}
	merged := make([]kmsg.ProduceRequestTopic, len(topicIdx))
	started := make([]bool, len(topicIdx))
	pos := 0
	for i := range r.Topics {
		t := &merged[canon[i]]
		if !started[canon[i]] {
			started[canon[i]] = true
			*t = r.Topics[i]
			t.Partitions = nil
		}
		for _, p := range r.Topics[i].Partitions {
			if dropped == nil || !dropped[pos] {
				t.Partitions = append(t.Partitions, p)
			}
			pos++
		}
	}
	r.Topics = merged
	return n
}
