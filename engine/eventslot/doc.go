// Package eventslot hands out event ids that carry a slot and the slot's generation, so a backend's
// per-event state stays bounded in an endless run: once many events exist, the slots of events
// already recorded are reused, oldest first, and an id whose generation no longer matches its slot
// names an event recorded long ago (waiting on it returns at once). Both backends keep their events
// in a Table: the simulator its wait lists, the cuda backend its CUDA events.
//
// A slot's generation is never reset: it grows each time the slot is reused, so no earlier id of
// the slot ever names its new event. Generations have 12 bits and wrap, but a slot is reused only
// after at least ReuseFrom newer events, so an id could be taken for a new event only after some
// 268 million (4096 × ReuseFrom) newer ones.
package eventslot
