// file_io: the few whole-file and positioned-write helpers the queue stores use, with errno
// kept for the caller's message.
#pragma once

#include <cstdint>
#include <string>

namespace warren::persistence {

/// Reads a whole file into `out`; 0 on success, else the errno of the failure.
int read_whole(const std::string& path, std::string& out);

/// pwrite until everything is written; false (errno set) on an error.
bool write_all(int fd, const char* data, size_t size, uint64_t offset);

/// Creates (or replaces) `path` with `data` and, with `durable`, fdatasyncs it; false (errno
/// set) on an error.
bool write_new_file(const std::string& path, const std::string& data, bool durable = true);

/// Cuts `path` to `size` bytes; false (errno set) on an error.
bool truncate_file(const std::string& path, uint64_t size);

}  // namespace warren::persistence
