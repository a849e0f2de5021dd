// Package bucketing assigns rows to buckets exactly as Fluss 0.9.1's Java
// writer does: for tables with bucket keys, the key columns are encoded with
// CompactedKeyEncoder and hashed with FlussBucketingFunction; for tables
// without, a sticky or round-robin assigner picks the bucket. Tables on a
// data lake format (Paimon, Iceberg) use other key encodings and hashes,
// which this package does not implement.
package bucketing

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Bucket returns the bucket of an encoded bucket key among numBuckets:
// FlussBucketingFunction.bucketForRowKey.
func Bucket(key []byte, numBuckets int) (int, error) {
	if len(key) == 0 {
		return 0, errors.New("bucketing: empty bucket key")
	}
	if numBuckets <= 0 {
		return 0, fmt.Errorf("bucketing: bucket count %d must be positive", numBuckets)
	}
	return int(spread(HashBytes(key))) % numBuckets, nil
}

const (
	c1   = 0xcc9e2d51
	c2   = 0x1b873593
	seed = 42
)

// HashBytes is Fluss's MurmurHashUtils.hashUnsafeBytes with its default
// seed 42: 32-bit murmur3 over little-endian 4-byte words, except that each
// tail byte is mixed alone, sign-extended, as a full round (not packed into
// one word as murmur3 does).
func HashBytes(b []byte) int32 {
	h := uint32(seed)
	n := len(b)
	aligned := n - n%4
	for i := 0; i < aligned; i += 4 {
		h = mixH1(h, mixK1(binary.LittleEndian.Uint32(b[i:])))
	}
	for i := aligned; i < n; i++ {
		h = mixH1(h, mixK1(uint32(int32(int8(b[i])))))
	}
	return int32(fmix(h ^ uint32(n)))
}

func mixK1(k uint32) uint32 {
	k *= c1
	k = bits.RotateLeft32(k, 15)
	return k * c2
}

func mixH1(h, k uint32) uint32 {
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func fmix(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// spread is MathUtils.murmurHash: one more murmur round on the key hash,
// made non-negative the Java way (MIN_VALUE maps to 0).
func spread(code int32) int32 {
	h := mixH1(0, mixK1(uint32(code))) // h1 starts at 0 there: code*c1, rotl 15, *c2, rotl 13, *5+n
	h = fmix(h ^ 4)
	v := int32(h)
	switch {
	case v >= 0:
		return v
	case v != -1<<31:
		return -v
	default:
		return 0
	}
}
