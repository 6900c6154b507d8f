package profiles

import "hash/fnv"

// Group selection and flap jitter draw their randomness from a hash of what they are about (seed,
// group, node, cycle) rather than from a random stream. A node's draw then does not depend on the order
// anything is computed in, on the fleet size, or on the Go version's math/rand: the same seed gives the
// same run everywhere, and one phase's events can be computed without the others.

// mix64 is the splitmix64 finalizer: a cheap bijection with good avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// goldenRatio64 is 2^64 / phi, the splitmix64 increment: consecutive inputs land far apart.
const goldenRatio64 = 0x9e3779b97f4a7c15

// hashKey derives a key from a seed and a name.
func hashKey(seed int64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return mix64(uint64(seed) ^ mix64(h.Sum64()))
}

// hashOf hashes a key with further integers.
func hashOf(key uint64, xs ...uint64) uint64 {
	for _, x := range xs {
		key = mix64(key + (x+1)*goldenRatio64)
	}
	return key
}
