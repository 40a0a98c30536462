package classifier

import "unsafe"

// at reads a[i] without Go's bounds check, for the few table reads of
// Classify's hot path (flatMatch, trie.walk, portMap.lookup) where the
// checks cost about a fifth of the instructions. The caller must know
// i < len(a); an index out of range reads memory that is not the table's.
//
// What makes every such index in range is a property of the tables alone,
// never of the packet: each input of a read is either a fixed-size field
// of Meta (VLAN & 4095, DSCP & 63, protocol, a port, an address byte) or
// a class id read from another table, and NewClassifier builds the
// tables so that
//
//   - a trie's node references name nodes it has (index < len(meta),
//     index<<8 | 255 < len(nodes)), and its class ids are below the class
//     count of its direction (nDst for destinations, the source count for
//     sources);
//   - a portMap's page offsets leave 256 entries in page, and its class
//     ids (none included) are below the class count of its direction;
//   - dpID's classes are below nDP, and a flat group's two input tables
//     in arena span every index its inputs can take (vlan class × nDP +
//     DSCP-protocol class, source × nDst + destination, sport × nDport +
//     dport), their entries summing to an index below len(flatFirst);
//   - a family's flatEnd are in order and its last is len(flat[fam]).
//
// checkBounds (unchecked_test.go) verifies these for every classifier
// TestTablesMatchReference and FuzzTablesMatchReference build, over every
// value each input can take.
func at(a []uint32, i uint32) uint32 {
	return *(*uint32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(a)), uintptr(i)*4))
}

// atI is at for int32 tables.
func atI(a []int32, i uint32) int32 {
	return *(*int32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(a)), uintptr(i)*4))
}

// atG is at for the flat groups.
func atG(a []flatGroup, i uint32) flatGroup {
	return *(*flatGroup)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(a)), uintptr(i)*unsafe.Sizeof(flatGroup{})))
}

// atMeta is &a[i] for a trie's node metadata.
func atMeta(a []trieMeta, i uint32) *trieMeta {
	return (*trieMeta)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(a)), uintptr(i)*unsafe.Sizeof(trieMeta{})))
}

// at16 is at for uint16 tables.
func at16(a []uint16, i uint32) uint16 {
	return *(*uint16)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(a)), uintptr(i)*2))
}
