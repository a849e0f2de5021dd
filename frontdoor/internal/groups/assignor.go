package groups

import (
	"slices"
	"sort"
)

// Server-side assignors of the consumer protocol (KIP-848), named as Kafka
// names them; a member picks one with group.remote.assignor.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// Assignors lists the assignors served, the default first.
var Assignors = []string{AssignorUniform, AssignorRange}

// partSet is a set of partitions.
type partSet map[TopicPartition]bool

// assignSpec is what an assignor works from: each member's subscribed
// topics (already resolved to existing topics) and the partition counts.
type assignSpec struct {
	members    []string // sorted member ids
	subscribed map[string][]string
	partitions map[string]int32
	previous   map[string]partSet
}

// assign runs the named assignor.
func assign(name string, spec assignSpec) map[string]partSet {
	if name == AssignorRange {
		return assignRange(spec)
	}
	return assignUniform(spec)
}

// assignRange gives each topic's members (sorted by id) consecutive ranges
// of its partitions, the first P mod N members one more: members with the
// same subscriptions get the same partition numbers of every topic
// (co-partitioning).
func assignRange(spec assignSpec) map[string]partSet {
	out := map[string]partSet{}
	byTopic := map[string][]string{}
	for _, m := range spec.members {
		out[m] = partSet{}
		for _, t := range spec.subscribed[m] {
			byTopic[t] = append(byTopic[t], m)
		}
	}
	for t, ms := range byTopic {
		n := int32(len(ms))
		count := spec.partitions[t]
		per, extra := count/n, count%n
		next := int32(0)
		for i, m := range ms {
			take := per
			if int32(i) < extra {
				take++
			}
			for p := next; p < next+take; p++ {
				out[m][TopicPartition{t, p}] = true
			}
			next += take
		}
	}
	return out
}

// assignUniform spreads the partitions evenly over the members that
// subscribe to them, keeping each partition with its previous owner where
// balance allows (sticky), so a rebalance moves as few partitions as it
// can.
func assignUniform(spec assignSpec) map[string]partSet {
	out := map[string]partSet{}
	eligible := map[string]map[string]bool{}
	for _, m := range spec.members {
		out[m] = partSet{}
		eligible[m] = map[string]bool{}
		for _, t := range spec.subscribed[m] {
			eligible[m][t] = true
		}
	}
	var all []TopicPartition
	topics := make([]string, 0, len(spec.partitions))
	for t := range spec.partitions {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		for p := int32(0); p < spec.partitions[t]; p++ {
			all = append(all, TopicPartition{t, p})
		}
	}
	owner := map[TopicPartition]string{}
	for _, m := range spec.members {
		for tp := range spec.previous[m] {
			if eligible[m][tp.Topic] && tp.Partition < spec.partitions[tp.Topic] && owner[tp] == "" {
				owner[tp] = m
				out[m][tp] = true
			}
		}
	}
	// fewest returns the eligible member with the fewest partitions (ties
	// to the smallest id), "" when nobody subscribes to the topic.
	fewest := func(topic string) string {
		best := ""
		for _, m := range spec.members {
			if eligible[m][topic] && (best == "" || len(out[m]) < len(out[best])) {
				best = m
			}
		}
		return best
	}
	for _, tp := range all {
		if owner[tp] != "" {
			continue
		}
		if m := fewest(tp.Topic); m != "" {
			owner[tp] = m
			out[m][tp] = true
		}
	}
	// Move partitions from members with two or more than another eligible
	// member until no such move is left.
	for moved := true; moved; {
		moved = false
		for i := len(all) - 1; i >= 0; i-- { // the last partitions move first
			tp := all[i]
			from := owner[tp]
			if from == "" {
				continue
			}
			to := fewest(tp.Topic)
			if to != "" && len(out[from]) > len(out[to])+1 {
				delete(out[from], tp)
				out[to][tp] = true
				owner[tp] = to
				moved = true
			}
		}
	}
	return out
}

// sortedParts lists a set's partitions by topic, then partition.
func sortedParts(s partSet) []TopicPartition {
	out := make([]TopicPartition, 0, len(s))
	for tp := range s {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}
