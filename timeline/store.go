package timeline

// Sink consumes events as a producer emits them. Emit must not block the producer for long and must
// not retain the pointer.
type Sink interface {
	Emit(e *Event)
}

// HostNamer is a Sink that takes the names of hosts as a live source learns them (a rank joining
// attach names its host). The source calls NameHost on the goroutine that calls Emit, before the
// first event that carries the host's number.
type HostNamer interface {
	NameHost(h int32, name string)
}

// Store keeps a session's events in memory in the order they were emitted, with the session's
// string table. It is the consumer the report and the analyses read from.
type Store struct {
	Strings *Strings
	events  []Event
}

// NewStore returns an empty store sharing the given string table (a new one when nil).
func NewStore(strs *Strings) *Store {
	if strs == nil {
		strs = NewStrings()
	}
	return &Store{Strings: strs}
}

// Emit appends a copy of e.
func (s *Store) Emit(e *Event) { s.events = append(s.events, *e) }

// Events returns the stored events. The slice is shared: do not modify it.
func (s *Store) Events() []Event { return s.events }

// Len returns the number of stored events.
func (s *Store) Len() int { return len(s.events) }
