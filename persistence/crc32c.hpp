// CRC32C (Castagnoli), the checksum of segment records. Uses the SSE4.2 crc32 instruction when
// the CPU has it, a table otherwise; both give the same values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace warren::persistence {

uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace warren::persistence
