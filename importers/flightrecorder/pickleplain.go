package flightrecorder

import (
	"fmt"
	"strconv"
)

// field says which of a dump's values plain is turning into plain ones, so that it makes only
// what parseDump reads: the fields of the dump, of a process group and of an entry it looks up
// (fieldKeys). A field it never reads (an entry's frames, its stack traces, the largest part of a
// real dump) is left out unvisited: no map is made of its dicts nor a copy of its lists.
type field uint8

const (
	anyField     field = iota // every value under it is read
	dumpField                 // the dump's top level
	groupsField               // pg_config: process groups by name, every name kept
	groupField                // one process group
	entriesField              // the ring's entries
	entryField                // one entry
)

// fieldKeys are the keys parseDump, parsePGs and parseEntry read of each dict.
var fieldKeys = map[field]map[string]field{
	dumpField:  {"version": anyField, "rank": anyField, "pg_config": groupsField, "entries": entriesField},
	groupField: {"name": anyField, "desc": anyField, "ranks": anyField},
	entryField: {"profiling_name": anyField, "state": anyField, "record_id": anyField, "collective_seq_id": anyField,
		"p2p_seq_id": anyField, "process_group": anyField, "pg_id": anyField, "time_created_ns": anyField,
		"time_discovered_started_ns": anyField, "time_discovered_completed_ns": anyField, "duration_ms": anyField,
		"retired": anyField, "is_p2p": anyField, "input_sizes": anyField, "output_sizes": anyField, "input_dtypes": anyField, "output_dtypes": anyField},
}

// emptyPlainList is an empty list's plain value, boxed once: a slice put in an interface is
// copied to the heap each time.
var emptyPlainList any = []any(nil)

// plain turns a dump's pickle value into the values encoding/json decodes into and parseDump
// reads: map[string]any (keys written as strings), []any, string, int64, float64, bool, nil.
// budget bounds the values visited (memo references can share one container many times).
func plain(v any, depth int, budget *int) (any, error) {
	return plainField(v, dumpField, depth, budget)
}

// plainField is plain of a value of field f. A list's items are turned in place (the pickle's
// values are not read again), an empty container is a nil map or list (no allocation), and a dict
// of a field with fieldKeys keeps only those keys.
func plainField(v any, f field, depth int, budget *int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("more values than the dump's size allows (shared containers repeated)")
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("values nested more than %d deep", maxDepth)
	}
	item := anyField // a list's items' field
	if f == entriesField {
		item = entryField
	}
	switch x := v.(type) {
	case nil, bool, int64, float64, string, map[string]any:
		return x, nil // a map: a shared dict made on an earlier visit
	case []byte:
		return string(x), nil
	case empty:
		if x == emptyDict {
			return map[string]any(nil), nil
		}
		return emptyPlainList, nil
	case tuple, *plist:
		if f == entryField {
			// An entry that is a list is left out (parseEntry: not a dict), its items unread.
			return emptyPlainList, nil
		}
	}
	switch x := v.(type) {
	case tuple:
		return plainList(x, item, depth, budget)
	case []any: // a shared list turned on an earlier visit: its items are plain, visited again for the budget
		return plainList(x, item, depth, budget)
	case *plist:
		if f == entriesField {
			// Turned one entry at a time as parseDump reads it: an entry's map is made, read
			// and dropped, never every entry's at once.
			return &pickleEntries{list: x, depth: depth, budget: budget}, nil
		}
		out := make([]any, 0, x.n)
		for _, c := range x.chunks {
			out = append(out, c...)
		}
		return plainList(out, item, depth, budget)
	case *pdict:
		return plainDict(x, f, depth, budget)
	case global:
		return nil, fmt.Errorf("a bare reference to %s.%s", x.module, x.name)
	}
	return nil, fmt.Errorf("a value of type %T", v)
}

// pickleEntries are a pickle's entries as plain gives them to parseDump, which turns each into
// plain values (an entry's dict a map) as it reads it (entries).
type pickleEntries struct {
	list   *plist
	depth  int
	budget *int
}

// each calls f with each entry's plain value, or the error turning it, in order; an error f
// returns stops it.
func (l *pickleEntries) each(f func(i int, v any, err error) error) error {
	i := 0
	for _, c := range l.list.chunks {
		for _, it := range c {
			v, err := plainField(it, entryField, l.depth+1, l.budget)
			if err := f(i, v, err); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

// plainDict is plainField of a dict: a nil map when none of its keys is kept.
func plainDict(x *pdict, f field, depth int, budget *int) (any, error) {
	keys := fieldKeys[f]
	kept := len(x.keys)
	if keys != nil {
		kept = 0
		for _, k := range x.keys {
			if ks, ok := k.(string); ok && hasKey(keys, ks) {
				kept++ // an integer key is none of fieldKeys' names
			}
		}
	}
	var m map[string]any
	if kept > 0 {
		m = make(map[string]any, kept)
	}
	for i, k := range x.keys {
		var ks string
		switch kk := k.(type) {
		case string:
			ks = kk
		case int64:
			ks = strconv.FormatInt(kk, 10)
		default:
			return nil, fmt.Errorf("a dict key of type %s", valueKind(k))
		}
		vf := anyField
		switch {
		case f == groupsField:
			vf = groupField
		case keys != nil:
			kf, ok := keys[ks]
			if !ok {
				continue // a field the importer does not read
			}
			vf = kf
		}
		pv, err := plainField(x.vals[i], vf, depth+1, budget)
		if err != nil {
			return nil, err
		}
		m[ks] = pv
	}
	return m, nil
}

func hasKey(keys map[string]field, k string) bool { _, ok := keys[k]; return ok }

// plainList turns items into plain values in place and returns them.
func plainList(items []any, f field, depth int, budget *int) ([]any, error) {
	for i, it := range items {
		p, err := plainField(it, f, depth+1, budget)
		if err != nil {
			return nil, err
		}
		items[i] = p
	}
	return items, nil
}
