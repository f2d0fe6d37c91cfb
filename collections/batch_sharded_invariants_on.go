//go:build invariants

package collections

// shInvariants makes every write to a ShardedMap or ShardedBTree check
// afterwards that each shard holds only the keys routed to it (build with
// -tags invariants).
const shInvariants = true
