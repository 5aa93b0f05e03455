package nsys

import (
	"errors"
	"slices"
	"strings"
)

// The schema of an export is read from its pages (sqlite_master's rows) where it can be: the
// columns of a table from the CREATE TABLE statement SQLite keeps, as pragma_table_xinfo lists
// them. The parser reads the statements an export's tables are created with, and refuses (so that
// SQLite reads the schema instead) whatever it is not sure of: a virtual table, a table without
// rowid, a generated column, a statement it does not follow to its end.

// errSchemaSQL is why a CREATE TABLE statement is left to SQLite.
var errSchemaSQL = errors.New("a CREATE TABLE statement the page reader leaves to SQLite")

// tableDef is a table's columns as its CREATE TABLE statement declares them.
type tableDef struct {
	cols  []string        // in the order of the record
	pk    map[string]bool // part of the primary key
	dflt  map[string]bool // with a default value
	alias string          // the column that is the rowid (an INTEGER PRIMARY KEY), or ""
	// integer marks the columns declared INTEGER, exactly: only such a primary key is the rowid.
	integer map[string]bool
}

// sqlToken is a token of a statement: an identifier or keyword (quoted: its name, unquoted:
// as written), a literal, or a punctuation mark.
type sqlToken struct {
	text   string
	quoted bool // a quoted identifier (or string): never a keyword
}

// is reports whether the token is the keyword kw.
func (t sqlToken) is(kw string) bool { return !t.quoted && strings.EqualFold(t.text, kw) }

// tokenize splits a statement into tokens, without its comments.
func tokenize(s string) ([]sqlToken, error) {
	var out []sqlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return out, nil
			}
			i += j + 1
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return out, nil // SQLite ends an unclosed comment at the end of the text
			}
			i += j + 4
		case c == '"' || c == '`' || c == '\'' || c == '[':
			end := c
			if c == '[' {
				end = ']'
			}
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, errSchemaSQL
				}
				if s[j] == end {
					if end != ']' && j+1 < len(s) && s[j+1] == end { // a doubled quote
						b.WriteByte(end)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, sqlToken{text: b.String(), quoted: true})
			i = j + 1
		case isIdentByte(c):
			j := i
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}
			out = append(out, sqlToken{text: s[i:j]})
			i = j
		default:
			out = append(out, sqlToken{text: s[i : i+1]})
			i++
		}
	}
	return out, nil
}

// isIdentByte reports whether c may be part of an unquoted identifier, keyword or number (SQLite
// takes every byte from 0x80 as a letter).
func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// parseCreateTable reads the columns of a CREATE TABLE statement as SQLite keeps it.
func parseCreateTable(sql string) (*tableDef, error) {
	toks, err := tokenize(sql)
	if err != nil {
		return nil, err
	}
	if len(toks) < 4 || !toks[0].is("CREATE") || !toks[1].is("TABLE") {
		return nil, errSchemaSQL // CREATE VIRTUAL TABLE, a temporary table
	}
	i := 2
	if toks[i].is("IF") { // IF NOT EXISTS
		i += 3
	}
	i++ // the table's name
	if i+1 < len(toks) && toks[i].text == "." && !toks[i].quoted {
		i += 2 // schema.name
	}
	if i >= len(toks) || toks[i].text != "(" || toks[i].quoted {
		return nil, errSchemaSQL // CREATE TABLE ... AS SELECT is kept with its columns, never so
	}
	defs, rest, err := splitDefs(toks[i+1:])
	if err != nil {
		return nil, err
	}
	for _, t := range rest { // table options: STRICT is read alike, WITHOUT ROWID is not
		if !t.is("STRICT") && !(t.text == "," && !t.quoted) {
			return nil, errSchemaSQL
		}
	}
	d := &tableDef{pk: map[string]bool{}, dflt: map[string]bool{}}
	var keyList []string // a table constraint's PRIMARY KEY (...)
	keyDesc := false
	for _, def := range defs {
		if len(def) == 0 {
			return nil, errSchemaSQL
		}
		if isTableConstraint(def[0]) {
			if names, desc, ok := primaryKeyList(def); ok {
				keyList, keyDesc = names, desc
			}
			continue
		}
		if err := d.column(def); err != nil {
			return nil, err
		}
	}
	if len(d.cols) == 0 {
		return nil, errSchemaSQL
	}
	for i, c := range keyList { // names are matched as SQLite matches them, in any case
		j := slices.IndexFunc(d.cols, func(col string) bool { return strings.EqualFold(col, c) })
		if j < 0 {
			return nil, errSchemaSQL
		}
		keyList[i] = d.cols[j]
		d.pk[d.cols[j]] = true
	}
	if len(keyList) == 1 && !keyDesc && d.alias == "" && d.integer[keyList[0]] {
		d.alias = keyList[0]
	}
	return d, nil
}

// splitDefs splits what follows a CREATE TABLE's "(" at its commas, up to the matching ")";
// it returns the definitions and the tokens after the ")".
func splitDefs(toks []sqlToken) ([][]sqlToken, []sqlToken, error) {
	var defs [][]sqlToken
	depth, start := 0, 0
	for i, t := range toks {
		if t.quoted {
			continue
		}
		switch t.text {
		case "(":
			depth++
		case ")":
			if depth == 0 {
				return append(defs, toks[start:i]), toks[i+1:], nil
			}
			depth--
		case ",":
			if depth == 0 {
				defs = append(defs, toks[start:i])
				start = i + 1
			}
		}
	}
	return nil, nil, errSchemaSQL
}

func isTableConstraint(t sqlToken) bool {
	for _, kw := range []string{"CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"} {
		if t.is(kw) {
			return true
		}
	}
	return false
}

// primaryKeyList reads a table constraint PRIMARY KEY (a, b ...): its columns, and whether one is
// in descending order.
func primaryKeyList(def []sqlToken) ([]string, bool, bool) {
	i := 0
	if def[0].is("CONSTRAINT") {
		i = 2
	}
	if i+2 >= len(def) || !def[i].is("PRIMARY") || !def[i+1].is("KEY") || def[i+2].text != "(" {
		return nil, false, false
	}
	var names []string
	desc := false
	depth := 0
	expectName := true
	for _, t := range def[i+3:] {
		switch {
		case !t.quoted && t.text == "(":
			depth++
		case !t.quoted && t.text == ")":
			if depth == 0 {
				return names, desc, true
			}
			depth--
		case depth > 0:
		case !t.quoted && t.text == ",":
			expectName = true
		case expectName:
			names, expectName = append(names, t.text), false
		case t.is("DESC"):
			desc = true
		}
	}
	return nil, false, false
}

// columnKeywords start a column's constraints, ending its type.
var columnKeywords = []string{"CONSTRAINT", "PRIMARY", "NOT", "NULL", "UNIQUE", "CHECK", "DEFAULT", "COLLATE", "REFERENCES", "GENERATED", "AS"}

// column reads a column definition: its name, type and constraints.
func (d *tableDef) column(def []sqlToken) error {
	name := def[0].text
	i := 1
	var typ []string
	for ; i < len(def); i++ {
		t := def[i]
		if !t.quoted && slicesContainsFold(columnKeywords, t.text) {
			break
		}
		if !t.quoted && t.text == "(" { // VARCHAR(10), DECIMAL(10, 5)
			for ; i < len(def) && !(def[i].text == ")" && !def[i].quoted); i++ {
			}
			typ = append(typ, "(")
			continue
		}
		typ = append(typ, t.text)
	}
	integer := len(typ) == 1 && strings.EqualFold(typ[0], "INTEGER")
	depth := 0
	for ; i < len(def); i++ {
		t := def[i]
		switch {
		case t.quoted:
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		case depth > 0:
		case t.is("GENERATED") || t.is("AS"):
			return errSchemaSQL // a generated column: hidden, and not in every record
		case t.is("DEFAULT"):
			d.dflt[name] = true
		case t.is("PRIMARY"):
			d.pk[name] = true
			desc := i+2 < len(def) && def[i+1].is("KEY") && def[i+2].is("DESC")
			if integer && !desc {
				d.alias = name
			}
		}
	}
	if d.integer == nil {
		d.integer = map[string]bool{}
	}
	d.integer[name] = integer
	d.cols = append(d.cols, name)
	return nil
}

func slicesContainsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
