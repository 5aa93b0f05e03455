package importers

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
)

// DuplicateError is an input given twice: the same file under two names (or one name twice), or a
// copy of another input. Merged, its events would be counted twice (twice the steps, bytes and
// devices), so it is refused rather than read.
type DuplicateError struct {
	File, Other string
	Copy        bool // the same bytes in another file, not the same file
}

func (e *DuplicateError) Error() string {
	if e.Copy {
		return fmt.Sprintf("%s holds the same bytes as %s (a copy?): give each rank's or host's file once, or its events are counted twice", e.File, e.Other)
	}
	if e.File == e.Other {
		return fmt.Sprintf("%s is given twice: give each file once, or its events are counted twice", e.File)
	}
	return fmt.Sprintf("%s is %s given again (the same file): give each file once, or its events are counted twice", e.File, e.Other)
}

// sampleBytes is how much of each end of files of one size is hashed before their whole contents
// are: different files of one size are told apart without reading most of them.
const sampleBytes = 64 << 10

// inputFile is an input that is a regular file, with what Stat said of it.
type inputFile struct {
	path string
	st   os.FileInfo
}

// checkDuplicates refuses an input that is another input again (os.SameFile: one path twice, or a
// link to it) or a copy of one (the same size and the same bytes), naming the later of the two.
// Inputs that cannot be read are left to the importer, which says what is wrong with them.
func checkDuplicates(paths []string) error {
	var files []inputFile
	bySize := map[int64][]inputFile{}
	var sizes []int64 // in the order first seen, so the first copy given is the one named
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		for _, f := range files {
			if os.SameFile(f.st, st) {
				return &DuplicateError{File: p, Other: f.path}
			}
		}
		f := inputFile{p, st}
		files = append(files, f)
		if bySize[st.Size()] == nil {
			sizes = append(sizes, st.Size())
		}
		bySize[st.Size()] = append(bySize[st.Size()], f)
	}
	for _, size := range sizes {
		if group := bySize[size]; len(group) > 1 && size > 0 { // empty files: the importer says so
			if err := sameBytes(group); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameBytes refuses a file of group (all of one size) whose bytes are another's: files whose ends
// differ are not read further; those whose ends match are hashed whole.
func sameBytes(group []inputFile) error {
	byEnds := map[[sha256.Size]byte][]inputFile{}
	var order [][sha256.Size]byte
	for _, f := range group {
		sum, err := fingerprint(f, true)
		if err != nil {
			continue
		}
		if byEnds[sum] == nil {
			order = append(order, sum)
		}
		byEnds[sum] = append(byEnds[sum], f)
	}
	for _, k := range order {
		same := byEnds[k]
		if len(same) < 2 {
			continue
		}
		whole := map[[sha256.Size]byte]string{}
		for _, f := range same {
			sum, err := fingerprint(f, false)
			if err != nil {
				continue
			}
			if other, ok := whole[sum]; ok {
				return &DuplicateError{File: f.path, Other: other, Copy: true}
			}
			whole[sum] = f.path
		}
	}
	return nil
}

// fingerprint hashes a file: its first and last sampleBytes when ends is set, else all of it.
func fingerprint(f inputFile, ends bool) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	r, err := os.Open(f.path)
	if err != nil {
		return sum, err
	}
	defer r.Close()
	h := sha256.New()
	size := f.st.Size()
	switch {
	case !ends || size <= 2*sampleBytes:
		_, err = io.Copy(h, r)
	default:
		if _, err = io.Copy(h, io.NewSectionReader(r, 0, sampleBytes)); err == nil {
			_, err = io.Copy(h, io.NewSectionReader(r, size-sampleBytes, sampleBytes))
		}
	}
	if err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}
