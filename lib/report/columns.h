// What each table.csv column holds: the one list csvColumns() is built from and doc/columns.md is
// generated from (`fabricbench-report --columns`; the cli_docs test checks the page is current).
#pragma once

#include <string>
#include <vector>

namespace fb {

struct ColumnDoc {
  std::string name;
  std::string unit;  // "—" when the column has none
  std::string meaning;
};

const std::vector<ColumnDoc>& csvColumnDocs();

// doc/columns.md: the page as fabricbench-report --columns prints it.
std::string columnsMarkdown();

}  // namespace fb
