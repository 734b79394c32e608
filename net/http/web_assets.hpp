// web_assets: the management web page (net/http/www) and the charting library it uses (Chart.js
// from Debian's libjs-chart.js), built into the binary so that the page needs nothing fetched at
// run time. The bytes come from a file CMake generates (cmake/embed_assets.cmake).
#pragma once

#include <cstddef>
#include <string>

namespace warren::net::http {

struct web_asset {
  const char* name;
  const char* content_type;
  const char* bytes;
  size_t size;
};

/// The asset served at /`name`, or nullptr.
const web_asset* find_asset(const std::string& name);

}  // namespace warren::net::http
