package judge

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// newCSVReader returns a strict RFC 4180 reader: quotes must be well
// formed, rows may differ in length (the comparison reports it).
func newCSVReader(b []byte) *csv.Reader {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	return r
}

// csvError describes a csv parse error without quoting the input.
func csvError(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	return err.Error()
}

// numericCell returns the number in a cell, ignoring surrounding blanks.
func numericCell(s string) (number, bool) {
	n, err := parseNumber(strings.Trim(s, " \t"))
	return n, err == nil
}

// readExpectedCSV parses and checks the expected CSV.
func readExpectedCSV(want []byte, c Comparator) ([][]string, error) {
	rows, err := newCSVReader(want).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%w: csv: %s", ErrExpected, csvError(err))
	}
	for r, row := range rows {
		if r == 0 && c.CSVHeader {
			continue
		}
		for col, cell := range row {
			if n, ok := numericCell(cell); ok && n.class == notANumber && !c.AllowNaN {
				return nil, fmt.Errorf("%w: csv: row %d, column %d: NaN can never match unless allow_nan is set", ErrExpected, r+1, col+1)
			}
		}
	}
	if c.CSVHeader && len(rows) == 0 {
		return nil, fmt.Errorf("%w: csv: csv_header is set but there is no header row", ErrExpected)
	}
	return rows, nil
}

// compareCSV compares CSV documents row by row and cell by cell. A cell
// whose expected text is a number (see parseNumber) is compared as a
// number; any other cell as text. The header row, with csv_header, is
// compared exactly.
func compareCSV(got, want []byte, c Comparator) (*finding, error) {
	wrows, err := readExpectedCSV(want, c)
	if err != nil {
		return nil, err
	}
	t := c.tolerance()
	g := newCSVReader(got)
	g.ReuseRecord = true
	for r := 0; ; r++ {
		row, err := g.Read()
		rowAt := "row " + strconv.Itoa(r+1)
		if errors.Is(err, io.EOF) {
			if r < len(wrows) {
				return differsAt(rowAt, fmt.Sprintf("output ends early: got %s, want %d", plural(r, "row"), len(wrows))), nil
			}
			return nil, nil
		}
		if err != nil {
			return csvSyntax(err), nil
		}
		if r >= len(wrows) {
			return differsAt(rowAt, rowAt+": unexpected extra row"), nil
		}
		wrow := wrows[r]
		if len(row) != len(wrow) {
			return differsAt(rowAt, fmt.Sprintf("%s: got %s, want %d", rowAt, plural(len(row), "column"), len(wrow))), nil
		}
		header := r == 0 && c.CSVHeader
		for col := range row {
			where := fmt.Sprintf("%s, column %d", rowAt, col+1)
			if header {
				if row[col] != wrow[col] {
					return differsAt(where, fmt.Sprintf("%s (header): got %s", where, quoteString(row[col]))), nil
				}
				continue
			}
			if why := compareCell(row[col], wrow[col], t, c.IgnoreCase); why != "" {
				return differsAt(where, where+": "+why), nil
			}
		}
	}
}

// csvSyntax describes candidate text that is not CSV: a position and the
// parser's fixed description, never the text.
func csvSyntax(err error) *finding {
	f := &finding{what: "not valid CSV", detail: "not valid CSV: " + csvError(err)}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		f.at = fmt.Sprintf("line %d, column %d", pe.Line, pe.Column)
	}
	return f
}

// compareCell compares one data cell; "" means equal.
func compareCell(got, want string, t tolerance, ignoreCase bool) string {
	if wn, ok := numericCell(want); ok {
		gn, ok := numericCell(got)
		if !ok {
			return fmt.Sprintf("got %s, want a number", quoteString(got))
		}
		if !t.equal(gn, wn) {
			return t.mismatch(gn)
		}
		return ""
	}
	if !textEqual([]byte(got), []byte(want), ignoreCase) {
		return "got " + quoteString(got)
	}
	return ""
}
