// folder_check: a read-only check of queue folders, for `warren-node --check`. Every file is read
// as recovery (segment_store) reads it, with segment_format's functions, and each problem comes
// with what a start does about it and what that costs, so that a person can decide before the
// node starts. Nothing is opened for writing, nothing removed.
//
// What recovery does, and so what the findings say: a damaged frame costs its own records (the
// scan resumes at the next good frame; the file is kept as it is); a torn tail of the newest
// segment, or of any mark file, is cut off; damaged marks bring messages back marked redelivered;
// an index that does not check out, or names another size of its segment, is not used; unknown
// files are left alone; a file or folder that cannot be read makes its queue unavailable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace warren::persistence {

/// One problem with one file or folder.
struct folder_finding {
  std::string path;
  std::string problem;      // what is wrong: "damaged records at offset 4096 (57 bytes)"
  std::string cost;         // what a start does about it, and what that costs
  bool loses_data = false;  // messages are lost or out of reach, not only handled by a start
  /// What moving aside settles it (the damaged segment with its mark and index files, or an
  /// index that would misplace messages); empty when a start handles it, or moving would only
  /// cost more.
  std::vector<std::string> move_aside;
  std::string if_moved;  // what moving them aside costs beyond the damage itself
};

struct folder_check_result {
  size_t folders = 0;  // queue folders read
  size_t files = 0;    // segment, mark and index files read
  std::vector<folder_finding> findings;
};

/// Checks one queue folder, adding to `out`.
void check_queue_folder(const std::string& folder, folder_check_result& out);

/// Checks every folder of `queues_dir` (DATA_DIR/queues). Given `live` (the ids that have a
/// queue record), an entry of no queue is noted and not read, as a start leaves it alone.
folder_check_result check_queue_folders(const std::string& queues_dir,
                                        const std::set<uint64_t>* live);

}  // namespace warren::persistence
