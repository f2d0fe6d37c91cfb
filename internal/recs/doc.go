// Package recs is the inside of package layout: where equal records sit on
// 64-byte lines ([Record], [For], [Of]) and which types may live in device
// memory ([CheckType], [Check]). layout's exported Record converts to and
// from [Record]; vmem and the collections place their records and check
// their element types here. It imports nothing of govram, so that layout
// and every other package may import it.
package recs
