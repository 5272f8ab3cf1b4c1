// The one CSV splitter (RFC 4180 quoting) behind table.csv's reader, the HTML report and the tests.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fb {

struct CsvRecord {
  std::size_t line;  // the line the record starts on (a quoted field may span lines)
  std::vector<std::string> fields;
};

// Strict: a truncated write (unterminated quote, no end of line at the end) is an error.
// Tolerant: the last record is kept as it stands and blank lines are skipped.
enum class CsvMode { Strict, Tolerant };

// Throws fb::Error naming source and line on malformed quoting.
std::vector<CsvRecord> splitCsvRecords(const std::string& text, const std::string& source,
                                       CsvMode mode);

// A CSV file as rows of fields, read Tolerant (a run may still be writing it); throws fb::Error
// when it cannot be read.
std::vector<std::vector<std::string>> readCsvTable(const std::string& path);

}  // namespace fb
