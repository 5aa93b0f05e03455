package units

import (
	"strconv"
	"strings"
)

// Plural is the word for n things: one when n is 1, else many, or when many is not given the
// regular English plural of one (rank → ranks, miss → misses, entry → entries). The count itself
// is Counted's.
func Plural[T ~int | ~int32 | ~int64 | ~uint32 | ~uint64](n T, one string, many ...string) string {
	if n == 1 {
		return one
	}
	if len(many) > 0 {
		return many[0]
	}
	return pluralOf(one)
}

// Counted is n and the word for n things: "1 rank", "7 ranks", "1 miss", "2 misses". Every
// count printed with a noun goes through it, so that no message reads "1 misses" or "(1 devices)".
func Counted[T ~int | ~int32 | ~int64 | ~uint32 | ~uint64](n T, one string, many ...string) string {
	return strconv.FormatInt(int64(n), 10) + " " + Plural(n, one, many...)
}

// pluralOf is the regular plural of a noun: its last word takes -es after s, x, z, ch and sh,
// -ies for a y after a consonant, else -s. Acronyms and units keep the rule (GPU → GPUs).
func pluralOf(one string) string {
	w := one
	if i := strings.LastIndexByte(one, ' '); i >= 0 {
		w = one[i+1:]
	}
	switch {
	case w == "":
		return one
	case strings.HasSuffix(w, "s") || strings.HasSuffix(w, "x") || strings.HasSuffix(w, "z") ||
		strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "sh"):
		return one + "es"
	case len(w) > 1 && w[len(w)-1] == 'y' && !strings.ContainsRune("aeiou", rune(w[len(w)-2])):
		return one[:len(one)-1] + "ies"
	}
	return one + "s"
}
