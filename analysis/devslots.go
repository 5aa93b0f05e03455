package analysis

// farSlots gives each device id at or past MaxDevices a slot of its own in the per-device state,
// from MaxDevices up in the order the ids are first seen: the ids below MaxDevices are their own
// slots (the state is a dense array, read with no look-up on the per-event path), and the others,
// up to int32 (a 100,000-GPU job, a trace's sparse ids), cost a map entry each, so the state is
// sized by the devices present rather than by the largest id.
type farSlots struct {
	slot map[int32]int32 // by device id (>= MaxDevices): its slot
	ids  []int32         // by slot - MaxDevices: the device id
}

// of returns dev's slot, giving it one when it has none; dev >= 0.
func (f *farSlots) of(dev int32) int32 {
	if dev < MaxDevices {
		return dev
	}
	if s, ok := f.slot[dev]; ok {
		return s
	}
	if f.slot == nil {
		f.slot = map[int32]int32{}
	}
	s := int32(MaxDevices + len(f.ids))
	f.slot[dev] = s
	f.ids = append(f.ids, dev)
	return s
}

// lookup returns dev's slot, false when it has none.
func (f *farSlots) lookup(dev int32) (int32, bool) {
	if dev < MaxDevices {
		return dev, true
	}
	s, ok := f.slot[dev]
	return s, ok
}

// id returns the device id of slot s.
func (f *farSlots) id(s int32) int32 {
	if s < MaxDevices {
		return s
	}
	return f.ids[s-MaxDevices]
}
